using System.Runtime.CompilerServices;
using Storage.Paging;
using Storage.Trees;

namespace Storage.Tests.Trees;

/// <summary>Damaged pages must end in <see cref="StorageCorruptedException"/> naming the page: no crash, no hang, no other exception.</summary>
public sealed unsafe class BTreeCorruptionTests
{
    private const int EntryCount = 4000;

    private static TreeFixture ThreeLevelTree()
    {
        var fixture = new TreeFixture();
        for (int i = 0; i < EntryCount; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, i % 50 == 0 ? 3000 : 1500));
        }
        fixture.Check();
        Assert.Equal(3, fixture.State.Depth);
        return fixture;
    }

    private static long LeafOf(TreeFixture fixture, long key)
    {
        var path = new TreePath();
        return fixture.Tree.DescendToLeaf(TreeFixture.Key(key), path).PageNumber;
    }

    private static long FirstChildOfRoot(TreeFixture fixture) =>
        TreePage.Open(fixture.Store.GetPage(fixture.State.RootPage), fixture.State.RootPage).GetChild(0);

    /// <summary>The slot of <paramref name="key"/>'s node in its leaf: the node a lookup of the key reads.</summary>
    private static byte* SlotOf(TreeFixture fixture, long leaf, long key)
    {
        byte* page = fixture.Store.RawPage(leaf);
        int index = TreePage.Open(page, leaf).SearchLeaf(TreeFixture.Key(key), out bool found);
        Assert.True(found);
        return page + PageLayout.HeaderSizeBytes + index * TreeNodeLayout.SlotSizeBytes;
    }

    /// <summary>Points a slot at <paramref name="offset"/> (its low 13 bits), keeping its key head.</summary>
    private static void SetOffset(byte* slot, int offset) =>
        Unsafe.WriteUnaligned(slot, (Unsafe.ReadUnaligned<uint>(slot) & ~TreeNodeLayout.OffsetMask) | ((uint)offset & TreeNodeLayout.OffsetMask));

    private static void AssertCorrupted(Action action, long pageNumber)
    {
        var exception = Assert.Throws<StorageCorruptedException>(action);
        Assert.Equal(pageNumber, exception.PageNumber);
    }

    [Fact]
    public void A_leaf_with_Lower_above_Upper_is_corruption()
    {
        using var fixture = ThreeLevelTree();
        long leaf = LeafOf(fixture, 1000);
        var header = (PageHeader*)fixture.Store.RawPage(leaf);
        header->Lower = (ushort)(header->Upper + 2);

        AssertCorrupted(() => fixture.Tree.TryGet(TreeFixture.Key(1000), out _), leaf);
        AssertCorrupted(() => fixture.Tree.Put(TreeFixture.Key(1000), new byte[3]), leaf);
        AssertCorrupted(fixture.Tree.Validate, leaf);
        AssertCorrupted(() => IterateAll(fixture), leaf);
    }

    [Fact]
    public void Upper_past_the_end_of_the_page_is_corruption()
    {
        using var fixture = ThreeLevelTree();
        long leaf = LeafOf(fixture, 10);
        ((PageHeader*)fixture.Store.RawPage(leaf))->Upper = PageLayout.PageSizeBytes + 8;
        AssertCorrupted(() => fixture.Tree.TryGet(TreeFixture.Key(10), out _), leaf);
    }

    [Theory]
    [InlineData(PageLayout.PageSizeBytes - 2)]
    [InlineData(PageLayout.PageSizeBytes + 100)]
    [InlineData(40)]
    public void A_node_offset_outside_the_node_area_is_corruption(int offset)
    {
        using var fixture = ThreeLevelTree();
        long leaf = LeafOf(fixture, 500);
        SetOffset(SlotOf(fixture, leaf, 500), offset);

        AssertCorrupted(() => fixture.Tree.TryGet(TreeFixture.Key(500), out _), leaf);
        AssertCorrupted(fixture.Tree.Validate, leaf);
    }

    [Fact]
    public void A_node_whose_key_runs_past_the_end_of_the_page_is_corruption()
    {
        using var fixture = ThreeLevelTree();
        long leaf = LeafOf(fixture, 500);
        byte* page = fixture.Store.RawPage(leaf);
        byte* slot = SlotOf(fixture, leaf, 500);
        var header = Unsafe.ReadUnaligned<LeafNodeHeader>(page + (Unsafe.ReadUnaligned<uint>(slot) & TreeNodeLayout.OffsetMask));
        header.KeySizeBytes = 1000;
        // Move the node near the end of the page so that a 1000-byte key cannot fit.
        SetOffset(slot, PageLayout.PageSizeBytes - 200);
        Unsafe.WriteUnaligned(page + PageLayout.PageSizeBytes - 200, header);

        AssertCorrupted(() => fixture.Tree.TryGet(TreeFixture.Key(500), out _), leaf);
    }

    [Fact]
    public void A_page_that_says_it_is_another_page_is_corruption()
    {
        using var fixture = ThreeLevelTree();
        long leaf = LeafOf(fixture, 2000);
        ((PageHeader*)fixture.Store.RawPage(leaf))->PageNumber = leaf + 1;

        var exception = Assert.Throws<StorageCorruptedException>(() => fixture.Tree.TryGet(TreeFixture.Key(2000), out _));
        Assert.Equal(leaf, exception.PageNumber);
        Assert.Contains($"expected page {leaf}", exception.Message);
    }

    [Fact]
    public void A_page_of_the_wrong_type_is_corruption()
    {
        using var fixture = ThreeLevelTree();
        long leaf = LeafOf(fixture, 2000);
        ((PageHeader*)fixture.Store.RawPage(leaf))->Flags = PageFlags.FreeSpaceBitmap;
        AssertCorrupted(() => fixture.Tree.TryGet(TreeFixture.Key(2000), out _), leaf);

        ((PageHeader*)fixture.Store.RawPage(leaf))->Flags = PageFlags.Branch;
        AssertCorrupted(() => fixture.Tree.TryGet(TreeFixture.Key(2000), out _), leaf);
    }

    [Fact]
    public void A_branch_pointing_back_to_the_root_is_corruption()
    {
        using var fixture = ThreeLevelTree();
        long branch = FirstChildOfRoot(fixture);
        TreePage.Open(fixture.Store.RawPage(branch), branch).SetChild(0, fixture.State.RootPage);

        Assert.Throws<StorageCorruptedException>(() => fixture.Tree.TryGet(TreeFixture.Key(0), out _));
        Assert.Throws<StorageCorruptedException>(fixture.Tree.Validate);
        Assert.Throws<StorageCorruptedException>(() => IterateAll(fixture));
        Assert.Throws<StorageCorruptedException>(() => fixture.Tree.VisitPages((_, _, _, _) => { }));
    }

    [Fact]
    public void A_branch_cycle_under_a_damaged_depth_ends_at_the_depth_limit()
    {
        using var fixture = ThreeLevelTree();
        long branch = FirstChildOfRoot(fixture);
        TreePage.Open(fixture.Store.RawPage(branch), branch).SetChild(0, fixture.State.RootPage);
        // With the recorded depth damaged too, only the descent limit stops the loop.
        fixture.State.Depth = 1000;

        var exception = Assert.Throws<StorageCorruptedException>(() => fixture.Tree.TryGet(TreeFixture.Key(0), out _));
        Assert.Contains("cycle", exception.Message);
    }

    [Theory]
    [InlineData(0L)]
    [InlineData(1L)]
    public void A_child_pointing_at_a_file_header_is_corruption(long child)
    {
        using var fixture = ThreeLevelTree();
        long branch = FirstChildOfRoot(fixture);
        byte* page = fixture.Store.RawPage(branch);
        int offset = (int)(Unsafe.ReadUnaligned<uint>(page + PageLayout.HeaderSizeBytes) & TreeNodeLayout.OffsetMask);
        Unsafe.WriteUnaligned(page + offset + sizeof(ushort), child);

        AssertCorrupted(() => fixture.Tree.TryGet(TreeFixture.Key(0), out _), branch);
    }

    [Fact]
    public void A_child_outside_the_file_is_corruption()
    {
        using var fixture = ThreeLevelTree();
        long branch = FirstChildOfRoot(fixture);
        TreePage.Open(fixture.Store.RawPage(branch), branch).SetChild(0, 1_000_000);
        Assert.Throws<StorageCorruptedException>(() => fixture.Tree.TryGet(TreeFixture.Key(0), out _));
    }

    [Fact]
    public void A_damaged_overflow_header_is_corruption()
    {
        using var fixture = ThreeLevelTree();
        Assert.True(fixture.Tree.TryGet(TreeFixture.Key(50), out _));
        long run = -1;
        fixture.Tree.VisitPages((page, type, _, _) => run = type == PageFlags.Overflow && run < 0 ? page : run);
        var header = (PageHeader*)fixture.Store.RawPage(run);

        header->OverflowSizeBytes = int.MaxValue;
        Assert.Throws<StorageCorruptedException>(fixture.Tree.Validate);
        header->OverflowSizeBytes = 10;
        Assert.Throws<StorageCorruptedException>(fixture.Tree.Validate);
        header->OverflowSizeBytes = 3000;
        header->Flags = PageFlags.Leaf;
        AssertCorrupted(fixture.Tree.Validate, run);
    }

    [Fact]
    public void Keys_out_of_order_fail_validation()
    {
        using var fixture = ThreeLevelTree();
        long leaf = LeafOf(fixture, 1500);
        byte* page = fixture.Store.RawPage(leaf);
        // Swap the first two slots (offsets and heads).
        ulong slots = Unsafe.ReadUnaligned<ulong>(page + PageLayout.HeaderSizeBytes);
        Unsafe.WriteUnaligned(page + PageLayout.HeaderSizeBytes, (slots >> 32) | (slots << 32));
        AssertCorrupted(fixture.Tree.Validate, leaf);
    }

    [Fact]
    public void Two_offsets_sharing_one_node_are_corruption()
    {
        using var fixture = ThreeLevelTree();
        long leaf = LeafOf(fixture, 1500);
        byte* page = fixture.Store.RawPage(leaf);
        int first = (int)(Unsafe.ReadUnaligned<uint>(page + PageLayout.HeaderSizeBytes) & TreeNodeLayout.OffsetMask);
        for (byte* slot = page + PageLayout.HeaderSizeBytes; slot < page + ((PageHeader*)page)->Lower; slot += TreeNodeLayout.SlotSizeBytes)
        {
            SetOffset(slot, first);
        }
        AssertCorrupted(fixture.Tree.Validate, leaf);
        AssertCorrupted(() => fixture.Tree.Put(TreeFixture.Key(1500), new byte[TreeLimits.MaxInlineValueSizeBytes]), leaf);
    }

    [Fact]
    public void Counts_that_disagree_with_the_header_fail_validation()
    {
        using var fixture = ThreeLevelTree();
        fixture.State.Entries++;
        Assert.Throws<StorageCorruptedException>(fixture.Tree.Validate);
    }

    /// <summary>Random byte flips in headers, offsets and nodes: every read either works or reports corruption.</summary>
    [Fact]
    public void Random_damage_never_escapes_as_anything_but_corruption()
    {
        using var fixture = new TreeFixture();
        for (int i = 0; i < 800; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i * 3), TreeFixture.Value(i, i % 40 == 0 ? 2500 : 60));
        }
        fixture.Check();
        var pages = new List<long>();
        fixture.Tree.VisitPages((page, _, _, _) => pages.Add(page));

        var random = new Random(77);
        var original = new byte[PageLayout.PageSizeBytes];
        int corrupted = 0;
        for (int round = 0; round < 400; round++)
        {
            long pageNumber = pages[random.Next(pages.Count)];
            byte* page = fixture.Store.RawPage(pageNumber);
            new ReadOnlySpan<byte>(page, original.Length).CopyTo(original);
            int flips = random.Next(1, 5);
            for (int f = 0; f < flips; f++)
            {
                // Half of the flips land in the header and offsets, where damage matters most.
                int offset = random.Next(2) == 0 ? random.Next(PageLayout.HeaderSizeBytes + 64) : random.Next(PageLayout.PageSizeBytes);
                page[offset] ^= (byte)(1 << random.Next(8));
            }
            try
            {
                for (int i = 0; i < 800 * 3; i += 7)
                {
                    if (fixture.Tree.TryGet(TreeFixture.Key(i), out var value))
                    {
                        _ = value.Length;
                    }
                }
                IterateAll(fixture, reverse: random.Next(2) == 0);
                fixture.Tree.Validate();
            }
            catch (StorageCorruptedException)
            {
                corrupted++;
            }
            original.CopyTo(new Span<byte>(page, original.Length));
        }
        Assert.True(corrupted > 100, $"only {corrupted} of 400 damaged trees were reported");
        fixture.Tree.Validate();
    }

    private static void IterateAll(TreeFixture fixture, bool reverse = false)
    {
        var cursor = fixture.Tree.CreateCursor();
        int steps = 0;
        bool positioned = reverse ? cursor.SeekLast() : cursor.SeekFirst();
        while (positioned)
        {
            _ = cursor.Value.Length;
            Assert.True(++steps < 1_000_000, "the cursor must not loop forever");
            positioned = reverse ? cursor.MovePrevious() : cursor.MoveNext();
        }
    }
}
