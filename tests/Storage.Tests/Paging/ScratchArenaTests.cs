using Storage.Paging;

namespace Storage.Tests.PagingTests;

public sealed class The_scratch_arena
{
    [Fact]
    public unsafe void Carves_pages_out_of_slabs_and_reuses_pages_handed_back_before_growing()
    {
        using var arena = new ScratchArena();
        const int pagesPerSlab = ScratchArena.SlabBytes / PageLayout.PageSizeBytes;
        var pages = Enumerable.Range(0, pagesPerSlab + 1).Select(_ => arena.Rent()).ToList();
        Assert.Equal(2L * ScratchArena.SlabBytes, arena.ReservedBytes);
        Assert.All(pages, page => Assert.Equal(0, (long)page.Pointer % 4096));
        Assert.Equal(pages.Count, pages.Select(page => (long)page.Pointer).Distinct().Count());
        // Pages of one slab are adjacent, so none overlaps another.
        Assert.Equal(PageLayout.PageSizeBytes, (long)pages[1].Pointer - (long)pages[0].Pointer);

        new Span<byte>(pages[3].Pointer, PageLayout.PageSizeBytes).Fill(0x5A);
        arena.Decommit(pages[3]);
        var again = arena.Rent();
        Assert.Same(pages[3], again);
        // Handed back to the kernel, the page reads as zeros (or, where the kernel keeps it, as it was): it is usable either way.
        new Span<byte>(again.Pointer, PageLayout.PageSizeBytes).Fill(1);
        Assert.Equal(2L * ScratchArena.SlabBytes, arena.ReservedBytes);
    }
}
