using Storage.Paging;

namespace Storage.Tests.Trees;

public sealed class BTreeSplitTests
{
    private const int ManyKeys = 100_000;

    [Fact]
    public void A_sequential_fill_of_100k_keys_leaves_leaves_almost_full()
    {
        using var fixture = new TreeFixture();
        for (int i = 0; i < ManyKeys; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 16));
            if (i % 10_000 == 0)
            {
                fixture.Store.Commit();
            }
        }
        fixture.Check();

        Assert.Equal(ManyKeys, fixture.State.Entries);
        Assert.Equal(ManyKeys, fixture.Tree.CountEntriesByWalking());
        // Each entry takes 4 (slot) + 4 (header) + 8 (key) + 16 (value) = 32 bytes, so a full leaf holds 255.
        long fullLeaves = (ManyKeys + 254) / 255;
        Assert.InRange(fixture.State.LeafPages, fullLeaves, fullLeaves + 1);
        for (int i = 0; i < ManyKeys; i += 997)
        {
            Assert.Equal(TreeFixture.Value(i, 16), fixture.Get(TreeFixture.Key(i)));
        }
    }

    [Fact]
    public void A_random_fill_of_100k_keys_finds_every_key()
    {
        using var fixture = new TreeFixture();
        var order = Enumerable.Range(0, ManyKeys).ToArray();
        new Random(1234).Shuffle(order);
        for (int i = 0; i < order.Length; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(order[i]), TreeFixture.Value(order[i], 16));
            if (i % 10_000 == 0)
            {
                fixture.Store.Commit();
            }
        }
        fixture.Check();

        Assert.Equal(ManyKeys, fixture.State.Entries);
        Assert.Equal(ManyKeys, fixture.Tree.CountEntriesByWalking());
        Assert.InRange(fixture.State.Depth, 3, 4);
        // Splits alone leave leaves ~69% full on average (ln 2); a full leaf first hands nodes to a sibling with room,
        // which keeps them above four fifths.
        long fullLeaves = (ManyKeys + 254) / 255;
        Assert.InRange(fixture.State.LeafPages, fullLeaves, fullLeaves * 5 / 4);
        for (int i = 0; i < ManyKeys; i++)
        {
            Assert.Equal(TreeFixture.Value(i, 16), fixture.Get(TreeFixture.Key(i)));
        }
    }

    [Fact]
    public void A_descending_fill_splits_correctly()
    {
        using var fixture = new TreeFixture();
        for (int i = 20_000; i > 0; i--)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 24));
        }
        fixture.Check();
        Assert.Equal(20_000, fixture.Tree.CountEntriesByWalking());
    }

    [Fact]
    public void A_split_places_the_new_page_near_the_page_it_split()
    {
        using var fixture = new TreeFixture();
        for (int i = 0; i < 5000; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 16));
        }
        fixture.Check();
        var leaves = new List<long>();
        fixture.Tree.VisitPages((page, type, _, _) =>
        {
            if (type == PageFlags.Leaf)
            {
                leaves.Add(page);
            }
        });
        // The bump allocator has nothing free, so "near" shows as leaves in ascending page order (key order).
        Assert.Equal(leaves.Order(), leaves);
    }

    [Fact]
    public unsafe void Long_keys_with_a_common_prefix_get_short_separators()
    {
        using var fixture = new TreeFixture();
        var prefix = new string('p', 500);
        for (int i = 0; i < 3000; i++)
        {
            fixture.Tree.Put(TreeFixture.TextKey($"{prefix}{i:D6}{new string('s', 300)}"), TreeFixture.Value(i, 10));
        }
        fixture.Check();

        // Keys are 806 bytes; a separator needs only the prefix and the digits up to the first difference.
        var branches = new List<long>();
        fixture.Tree.VisitPages((page, type, _, _) =>
        {
            if (type == PageFlags.Branch)
            {
                branches.Add(page);
            }
        });
        Assert.NotEmpty(branches);
        foreach (long pageNumber in branches)
        {
            var branch = Storage.Trees.TreePage.Open(fixture.Store.GetPage(pageNumber), pageNumber);
            for (int i = 1; i < branch.Count; i++)
            {
                Assert.InRange(branch.GetKey(i).Length, 501, 506);
            }
        }
    }
}
