using Storage.Paging;

namespace Storage.Tests.Trees;

public sealed class BTreeMergeTests
{
    [Fact]
    public void Deleting_every_key_in_random_order_shrinks_the_tree_to_one_empty_leaf()
    {
        using var fixture = new TreeFixture();
        const int count = 50_000;
        for (int i = 0; i < count; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 200));
        }
        fixture.Check();
        Assert.True(fixture.State.Depth >= 3);

        var order = Enumerable.Range(0, count).ToArray();
        new Random(99).Shuffle(order);
        for (int i = 0; i < count; i++)
        {
            Assert.True(fixture.Tree.Delete(TreeFixture.Key(order[i])));
            if (i % 5000 == 0)
            {
                fixture.Check();
            }
        }
        fixture.Check();

        Assert.Equal(0, fixture.State.Entries);
        Assert.Equal(1, fixture.State.Depth);
        Assert.Equal(1, fixture.State.LeafPages);
        Assert.Equal(0, fixture.State.BranchPages);
        Assert.Equal(1, fixture.Store.AllocatedPageCount);
        Assert.False(fixture.Tree.CreateCursor().SeekFirst());
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public void Deleting_in_key_order_from_either_end_empties_the_tree(bool ascending)
    {
        using var fixture = new TreeFixture();
        const int count = 30_000;
        for (int i = 0; i < count; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 40));
        }
        for (int i = 0; i < count; i++)
        {
            Assert.True(fixture.Tree.Delete(TreeFixture.Key(ascending ? i : count - 1 - i)));
        }
        fixture.Check();
        Assert.Equal(1, fixture.Store.AllocatedPageCount);
        Assert.Equal(1, fixture.State.Depth);
    }

    [Fact]
    public void Mass_deletes_merge_under_full_pages()
    {
        using var fixture = new TreeFixture();
        const int count = 40_000;
        for (int i = 0; i < count; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 20));
        }
        long leavesWhenFull = fixture.State.LeafPages;
        // Keep 1 key in 10: without merges every leaf would stay, at a tenth of its fill.
        for (int i = 0; i < count; i++)
        {
            if (i % 10 != 0)
            {
                Assert.True(fixture.Tree.Delete(TreeFixture.Key(i)));
            }
        }
        fixture.Check();
        Assert.Equal(count / 10, fixture.State.Entries);
        Assert.True(fixture.State.LeafPages <= leavesWhenFull / 3, $"{fixture.State.LeafPages} leaves of {leavesWhenFull}");
        for (int i = 0; i < count; i += 10)
        {
            Assert.Equal(TreeFixture.Value(i, 20), fixture.Get(TreeFixture.Key(i)));
        }

        int pages = 0;
        fixture.Tree.VisitPages((_, type, _, _) => pages += type is PageFlags.Leaf or PageFlags.Branch ? 1 : 0);
        Assert.Equal(fixture.Store.AllocatedPageCount, pages);
    }

    [Fact]
    public void Branch_merges_keep_every_key_reachable()
    {
        using var fixture = new TreeFixture();
        // Long keys make branches small, so deletes merge branch pages too (pulling separators down).
        var keys = Enumerable.Range(0, 6000).Select(i => TreeFixture.TextKey($"{new string('k', 400)}-{i:D6}")).ToArray();
        foreach (var key in keys)
        {
            fixture.Tree.Put(key, TreeFixture.Value(key[^1], 8));
        }
        fixture.Check();
        long branchesWhenFull = fixture.State.BranchPages;

        var random = new Random(5);
        var alive = new HashSet<int>(Enumerable.Range(0, keys.Length));
        for (int round = 0; round < 5; round++)
        {
            foreach (int i in alive.Where(_ => random.Next(3) != 0).ToList())
            {
                Assert.True(fixture.Tree.Delete(keys[i]));
                alive.Remove(i);
            }
            fixture.Check();
            foreach (int i in alive)
            {
                Assert.True(fixture.Tree.TryGet(keys[i], out _));
            }
        }
        Assert.True(fixture.State.BranchPages < branchesWhenFull);
        Assert.Equal(alive.Count, fixture.Tree.CountEntriesByWalking());
    }
}
