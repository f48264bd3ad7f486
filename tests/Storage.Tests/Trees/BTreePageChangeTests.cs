using Storage.Trees;

namespace Storage.Tests.Trees;

/// <summary>The journal stores diffs of the pages a transaction modifies, so the tree modifies only the pages it changes.</summary>
public sealed class BTreePageChangeTests
{
    [Fact]
    public void An_insert_that_fits_modifies_only_its_leaf()
    {
        using var fixture = new TreeFixture();
        for (int i = 0; i < 5000; i += 2)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 20));
        }
        fixture.Tree.Delete(TreeFixture.Key(1000));
        fixture.Check();

        fixture.Tree.Put(TreeFixture.Key(1000), TreeFixture.Value(1, 20));

        Assert.Equal(new[] { LeafOf(fixture, 1000) }, fixture.Store.ModifiedSinceCommit);
    }

    [Fact]
    public void Reads_and_misses_modify_nothing()
    {
        using var fixture = new TreeFixture();
        for (int i = 0; i < 5000; i += 2)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 20));
        }
        fixture.Check();

        Assert.False(fixture.Tree.Delete(TreeFixture.Key(1001)));
        Assert.True(fixture.Tree.TryGet(TreeFixture.Key(1000), out _));
        var cursor = fixture.Tree.CreateCursor();
        for (bool more = cursor.SeekFirst(); more; more = cursor.MoveNext())
        {
        }

        Assert.Empty(fixture.Store.ModifiedSinceCommit);
    }

    [Fact]
    public void A_sequential_split_leaves_the_full_page_untouched()
    {
        using var fixture = new TreeFixture();
        int next = 0;
        for (int split = 0; split < 5; split++)
        {
            long leaves = fixture.State.LeafPages;
            long lastLeaf;
            do
            {
                lastLeaf = LeafOf(fixture, next - 1);
                fixture.Check();
                fixture.Tree.Put(TreeFixture.Key(next), TreeFixture.Value(next, 20));
                next++;
            }
            while (fixture.State.LeafPages == leaves);

            // Only the parent gets the new separator (a root split allocates a new root instead).
            Assert.DoesNotContain(lastLeaf, fixture.Store.ModifiedSinceCommit);
            Assert.True(fixture.Store.ModifiedSinceCommit.Count <= 1);
        }
    }

    [Fact]
    public void Replacing_a_value_with_one_of_the_same_size_modifies_only_its_leaf()
    {
        using var fixture = new TreeFixture();
        for (int i = 0; i < 5000; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 20));
        }
        fixture.Check();

        fixture.Tree.Put(TreeFixture.Key(2500), TreeFixture.Value(7, 20));

        Assert.Equal(new[] { LeafOf(fixture, 2500) }, fixture.Store.ModifiedSinceCommit);
        Assert.Equal(TreeFixture.Value(7, 20), fixture.Get(TreeFixture.Key(2500)));
    }

    private static long LeafOf(TreeFixture fixture, long key) =>
        fixture.Tree.DescendToLeaf(TreeFixture.Key(key), new TreePath()).PageNumber;
}
