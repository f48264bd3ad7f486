namespace Storage.Tests.Trees;

/// <summary>
/// A full leaf hands nodes to a sibling with room before it splits. The trees here are filled in key order, which
/// leaves every leaf but the last exactly full (272 entries of 30 bytes: 2 offset + 4 header + 8 key + 16 value), so
/// leaf k holds entries 272k to 272k + 271; entries are even numbers, and an odd number lands between two of them.
/// </summary>
public sealed class BTreeRedistributeTests
{
    private const int PerLeaf = 272;

    [Fact]
    public void A_full_leaf_hands_nodes_to_its_right_sibling_with_room_instead_of_splitting()
    {
        using var fixture = FourLeaves();
        // Leaf 2 loses 60 entries (1,800 bytes of room); leaf 0, left of leaf 1, stays full.
        Delete(fixture, 2 * PerLeaf + 100, 60);
        Assert.Equal(4, fixture.State.LeafPages);

        InsertOdd(fixture, PerLeaf + 28);

        Assert.Equal(4, fixture.State.LeafPages);
        AssertAllThere(fixture, deletedFrom: 2 * PerLeaf + 100, deleted: 60, odd: PerLeaf + 28);
        // The right sibling took the upper part of leaf 1: the odd key, leaf 1's last entry and leaf 2's first sit
        // on the same leaf now, and the odd key did not move.
        var leaves = LeafOfEveryEntry(fixture);
        Assert.Equal(leaves[Even(2 * PerLeaf)], leaves[Even(2 * PerLeaf - 1)]);
        Assert.NotEqual(leaves[Even(PerLeaf)], leaves[Even(2 * PerLeaf - 1)]);
    }

    [Fact]
    public void A_full_leaf_hands_nodes_to_its_left_sibling_with_room_instead_of_splitting()
    {
        using var fixture = FourLeaves();
        // Leaf 0 loses 60 entries; leaf 2, right of leaf 1, stays full.
        Delete(fixture, 100, 60);

        InsertOdd(fixture, 2 * PerLeaf - 20);

        Assert.Equal(4, fixture.State.LeafPages);
        AssertAllThere(fixture, deletedFrom: 100, deleted: 60, odd: 2 * PerLeaf - 20);
        var leaves = LeafOfEveryEntry(fixture);
        Assert.Equal(leaves[Even(PerLeaf - 1)], leaves[Even(PerLeaf)]);
        Assert.NotEqual(leaves[Even(PerLeaf - 1)], leaves[Even(2 * PerLeaf - 1)]);
    }

    [Fact]
    public void A_full_leaf_whose_siblings_have_too_little_room_splits()
    {
        using var fixture = FourLeaves();
        // Ten entries (300 bytes) free in leaf 2: less than a sibling needs before it takes nodes.
        Delete(fixture, 2 * PerLeaf + 100, 10);

        InsertOdd(fixture, PerLeaf + 28);

        Assert.Equal(5, fixture.State.LeafPages);
        AssertAllThere(fixture, deletedFrom: 2 * PerLeaf + 100, deleted: 10, odd: PerLeaf + 28);
    }

    [Fact]
    public void A_random_fill_keeps_every_entry_through_moves_between_siblings()
    {
        // Keys of random lengths make separators of random lengths, so some moves find the parent without room for
        // the new separator and split instead; the tree validates and finds every key after each batch.
        using var fixture = new TreeFixture();
        var random = new Random(77);
        var model = new SortedDictionary<byte[], byte[]>(ByteArrayComparer.Instance);
        for (int batch = 0; batch < 20; batch++)
        {
            for (int i = 0; i < 2_000; i++)
            {
                var key = new byte[random.Next(1, 200)];
                random.NextBytes(key);
                var value = TreeFixture.Value(i, random.Next(0, 300));
                fixture.Tree.Put(key, value);
                model[key] = value;
            }
            fixture.Check();
            foreach (var (key, value) in model) Assert.Equal(value, fixture.Get(key));
        }
        Assert.Equal(model.Count, fixture.State.Entries);
    }

    private static long Even(long index) => 2 * index;

    /// <summary>Three full leaves and a fourth with 100 entries, under one root branch.</summary>
    private static TreeFixture FourLeaves()
    {
        var fixture = new TreeFixture();
        for (int i = 0; i < 3 * PerLeaf + 100; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(Even(i)), TreeFixture.Value(Even(i), 16));
        }
        fixture.Check();
        Assert.Equal(4, fixture.State.LeafPages);
        Assert.Equal(2, fixture.State.Depth);
        return fixture;
    }

    private static void Delete(TreeFixture fixture, int firstIndex, int count)
    {
        for (int i = firstIndex; i < firstIndex + count; i++) Assert.True(fixture.Tree.Delete(TreeFixture.Key(Even(i))));
        fixture.Check();
    }

    /// <summary>Inserts the odd number just above entry <paramref name="index"/>.</summary>
    private static void InsertOdd(TreeFixture fixture, int index)
    {
        fixture.Tree.Put(TreeFixture.Key(Even(index) + 1), TreeFixture.Value(Even(index) + 1, 16));
        fixture.Check();
    }

    private static void AssertAllThere(TreeFixture fixture, int deletedFrom, int deleted, int odd)
    {
        int count = 0;
        for (int i = 0; i < 3 * PerLeaf + 100; i++)
        {
            var key = TreeFixture.Key(Even(i));
            if (i >= deletedFrom && i < deletedFrom + deleted)
            {
                Assert.False(fixture.Tree.TryGet(key, out _));
                continue;
            }
            Assert.Equal(TreeFixture.Value(Even(i), 16), fixture.Get(key));
            count++;
        }
        Assert.Equal(TreeFixture.Value(Even(odd) + 1, 16), fixture.Get(TreeFixture.Key(Even(odd) + 1)));
        Assert.Equal(count + 1, fixture.Tree.CountEntriesByWalking());
    }

    /// <summary>The leaf page each key is on, by walking the leaves in key order with a cursor.</summary>
    private static Dictionary<long, long> LeafOfEveryEntry(TreeFixture fixture)
    {
        var leafOf = new Dictionary<long, long>();
        var cursor = fixture.Tree.CreateCursor();
        for (bool more = cursor.SeekFirst(); more; more = cursor.MoveNext())
        {
            leafOf[System.Buffers.Binary.BinaryPrimitives.ReadInt64BigEndian(cursor.Key)] = cursor.LeafPageNumber;
        }
        return leafOf;
    }
}
