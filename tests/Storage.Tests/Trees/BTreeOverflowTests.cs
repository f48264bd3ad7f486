using Storage.Paging;
using Storage.Trees;

namespace Storage.Tests.Trees;

public sealed unsafe class BTreeOverflowTests
{
    [Theory]
    [InlineData(TreeLimits.MaxInlineValueSizeBytes + 1)]
    [InlineData(100 * 1024)]
    [InlineData(5 * 1024 * 1024)]
    public void A_large_value_goes_to_an_overflow_run_and_reads_back(int sizeBytes)
    {
        using var fixture = new TreeFixture();
        var key = TreeFixture.TextKey("large");
        var value = TreeFixture.Value(3, sizeBytes);
        fixture.Tree.Put(key, value);
        fixture.Check();

        int runPages = (int)PageLayout.PagesForOverflow(sizeBytes);
        Assert.Equal(runPages, fixture.State.OverflowPages);
        Assert.Equal(1 + runPages, fixture.Store.AllocatedPageCount);
        Assert.True(fixture.Tree.TryGet(key, out var read));
        Assert.True(read.SequenceEqual(value));

        long first = FirstOverflowPage(fixture);
        var header = (PageHeader*)fixture.Store.GetPage(first);
        Assert.Equal(PageFlags.Overflow, header->Flags);
        Assert.Equal(sizeBytes, header->OverflowSizeBytes);
        Assert.Equal(first, header->PageNumber);
        Assert.Equal(fixture.State.TreeId, header->TreeId);
        Assert.True(new ReadOnlySpan<byte>((byte*)header + PageLayout.HeaderSizeBytes, sizeBytes).SequenceEqual(value));
    }

    [Fact]
    public void Replacing_and_deleting_overflow_values_frees_their_runs()
    {
        using var fixture = new TreeFixture();
        var key = TreeFixture.TextKey("large");
        int baseline = fixture.Store.AllocatedPageCount;

        fixture.Tree.Put(key, TreeFixture.Value(1, 100 * 1024));
        fixture.Tree.Put(key, TreeFixture.Value(2, 5 * 1024 * 1024));
        Assert.Equal(baseline + PageLayout.PagesForOverflow(5 * 1024 * 1024), fixture.Store.AllocatedPageCount);
        fixture.Tree.Put(key, TreeFixture.Value(3, TreeLimits.MaxInlineValueSizeBytes + 1));
        Assert.Equal(baseline + 1, fixture.Store.AllocatedPageCount);
        fixture.Check();

        fixture.Tree.Put(key, TreeFixture.Value(4, 10));
        Assert.Equal(baseline, fixture.Store.AllocatedPageCount);
        Assert.Equal(0, fixture.State.OverflowPages);
        Assert.Equal(TreeFixture.Value(4, 10), fixture.Get(key));

        fixture.Tree.Put(key, TreeFixture.Value(5, 20_000));
        Assert.True(fixture.Tree.Delete(key));
        Assert.Equal(baseline, fixture.Store.AllocatedPageCount);
        Assert.Equal(0, fixture.State.OverflowPages);
        fixture.Check();
    }

    [Fact]
    public void An_overflow_value_can_be_written_back_from_its_own_span()
    {
        using var fixture = new TreeFixture();
        var key = TreeFixture.TextKey("large");
        fixture.Tree.Put(key, TreeFixture.Value(1, 50_000));
        Assert.True(fixture.Tree.TryGet(key, out var value));
        // The old run is freed (and poisoned by the test store) only after the value was copied to the new one.
        fixture.Tree.Put(key, value[..40_000]);
        Assert.Equal(TreeFixture.Value(1, 50_000).AsSpan(0, 40_000).ToArray(), fixture.Get(key));
        fixture.Check();
    }

    [Fact]
    public void Many_overflow_values_mixed_with_small_ones_survive_splits_and_merges()
    {
        using var fixture = new TreeFixture();
        int baseline = fixture.Store.AllocatedPageCount;
        for (int i = 0; i < 3000; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, i % 7 == 0 ? 3000 + i : 100));
        }
        fixture.Check();
        for (int i = 0; i < 3000; i++)
        {
            Assert.Equal(TreeFixture.Value(i, i % 7 == 0 ? 3000 + i : 100), fixture.Get(TreeFixture.Key(i)));
        }
        for (int i = 0; i < 3000; i++)
        {
            Assert.True(fixture.Tree.Delete(TreeFixture.Key(i)));
        }
        fixture.Check();
        Assert.Equal(baseline, fixture.Store.AllocatedPageCount);
    }

    private static long FirstOverflowPage(TreeFixture fixture)
    {
        long first = -1;
        fixture.Tree.VisitPages((page, type, _, _) => first = type == PageFlags.Overflow ? page : first);
        return first;
    }
}
