using Storage.Paging;
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

    [Fact]
    public void A_split_in_the_middle_leaves_the_left_pages_nodes_in_place()
    {
        using var fixture = new TreeFixture();
        // Even keys first, so that every later odd key lands inside a full page, not at the end of the tree.
        for (int i = 0; i < 4000; i += 2)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 60));
        }
        fixture.Check();

        int splits = 0;
        for (int i = 1; i < 4000 && splits < 20; i += 2)
        {
            long leaf = LeafOf(fixture, i);
            var before = PageBytes(fixture, leaf);
            long leaves = fixture.State.LeafPages;
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 60));
            if (fixture.State.LeafPages == leaves)
            {
                fixture.Check();
                continue;
            }
            splits++;
            // The left page kept most of its nodes where they were (only the lowest move up, into the room the nodes
            // that went right left behind); a page rebuilt from scratch would have moved nearly all of them.
            var after = PageBytes(fixture, leaf);
            var (kept, inPlace) = NodesInPlace(before, after, leaf);
            Assert.True(inPlace * 2 >= kept, $"{inPlace} of {kept} nodes kept their place");
            Assert.InRange(DiffBytes(before, after), 1, PageLayout.PageSizeBytes / 3);
            fixture.Check();
        }
        Assert.Equal(20, splits);
        for (int i = 0; i < 4000; i += 2)
        {
            Assert.Equal(TreeFixture.Value(i, 60), fixture.Get(TreeFixture.Key(i)));
        }
        for (int i = 1; i < 4000; i += 2)
        {
            if (fixture.Tree.TryGet(TreeFixture.Key(i), out var value)) Assert.Equal(TreeFixture.Value(i, 60), value.ToArray());
        }
    }

    [Fact]
    public void An_insert_into_a_page_with_holes_fills_a_hole_instead_of_compacting()
    {
        using var fixture = new TreeFixture();
        // A sequential fill leaves the first leaf full.
        for (int i = 0; i < 2000; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i * 10), TreeFixture.Value(i, 60));
        }
        fixture.Check();
        long leaf = LeafOf(fixture, 0);
        int firstKeys = fixture.Tree.OpenPage(leaf).Count;
        // Holes in the middle of the page (removing the lowest node would give its room straight back).
        fixture.Tree.Delete(TreeFixture.Key(30));
        fixture.Tree.Delete(TreeFixture.Key(70));
        fixture.Check();
        var before = PageBytes(fixture, leaf);

        fixture.Tree.Put(TreeFixture.Key(31), TreeFixture.Value(31, 60));
        fixture.Tree.Put(TreeFixture.Key(71), TreeFixture.Value(71, 60));

        Assert.Equal(new[] { leaf }, fixture.Store.ModifiedSinceCommit);
        Assert.Equal(firstKeys, fixture.Tree.OpenPage(leaf).Count);
        // Two nodes of ~70 bytes and the offsets after them; compacting would have moved most of the page.
        Assert.InRange(DiffBytes(before, PageBytes(fixture, leaf)), 140, 600);
        fixture.Check();
        Assert.Equal(TreeFixture.Value(31, 60), fixture.Get(TreeFixture.Key(31)));
        Assert.Equal(TreeFixture.Value(71, 60), fixture.Get(TreeFixture.Key(71)));
        Assert.Equal(TreeFixture.Value(4, 60), fixture.Get(TreeFixture.Key(40)));
        Assert.False(fixture.Tree.TryGet(TreeFixture.Key(30), out _));
    }

    /// <summary>How many of the nodes on the page after are at the same offset as before (matched by key).</summary>
    private static unsafe (int Kept, int InPlace) NodesInPlace(byte[] before, byte[] after, long pageNumber)
    {
        var offsets = new Dictionary<string, long>();
        fixed (byte* b = before)
        {
            var page = TreePage.Open(b, pageNumber);
            for (int i = 0; i < page.Count; i++)
            {
                offsets[Convert.ToHexString(page.GetKey(i))] = page.GetNode(i, out _) - b;
            }
        }
        int kept = 0, inPlace = 0;
        fixed (byte* a = after)
        {
            var page = TreePage.Open(a, pageNumber);
            for (int i = 0; i < page.Count; i++)
            {
                if (!offsets.TryGetValue(Convert.ToHexString(page.GetKey(i)), out var offset)) continue;
                kept++;
                if (page.GetNode(i, out _) - a == offset) inPlace++;
            }
        }
        return (kept, inPlace);
    }

    private static unsafe byte[] PageBytes(TreeFixture fixture, long pageNumber) =>
        new ReadOnlySpan<byte>(fixture.Store.RawPage(pageNumber), PageLayout.PageSizeBytes).ToArray();

    private static int DiffBytes(byte[] before, byte[] after)
    {
        int count = 0;
        for (int i = 0; i < before.Length; i++)
        {
            if (before[i] != after[i]) count++;
        }
        return count;
    }

    private static long LeafOf(TreeFixture fixture, long key) =>
        fixture.Tree.DescendToLeaf(TreeFixture.Key(key), new TreePath()).PageNumber;
}
