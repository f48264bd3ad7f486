using Storage.Paging;
using Storage.Scratch;

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
        arena.Decommit([pages[3]]);
        var again = arena.Rent();
        Assert.Same(pages[3], again);
        // Handed back to the kernel, the page reads as zeros (or, where the kernel keeps it, as it was): it is usable either way.
        new Span<byte>(again.Pointer, PageLayout.PageSizeBytes).Fill(1);
        Assert.Equal(2L * ScratchArena.SlabBytes, arena.ReservedBytes);
    }

    [Fact]
    public unsafe void Hands_back_exactly_the_pages_given_in_runs_that_stop_at_slab_ends()
    {
        using var arena = new ScratchArena();
        const int pagesPerSlab = ScratchArena.SlabBytes / PageLayout.PageSizeBytes;
        var pages = Enumerable.Range(0, pagesPerSlab + 4).Select(_ => arena.Rent()).ToList();
        foreach (var page in pages) new Span<byte>(page.Pointer, PageLayout.PageSizeBytes).Fill(0x5A);
        // A run across the end of the first slab, out of order, and a page on its own.
        var given = new[] { pagesPerSlab + 1, pagesPerSlab - 2, pagesPerSlab, pagesPerSlab - 1, 5 };
        arena.Decommit([.. given.Select(i => pages[i])]);

        for (var i = 0; i < pages.Count; i++)
        {
            var bytes = new ReadOnlySpan<byte>(pages[i].Pointer, PageLayout.PageSizeBytes);
            if (!given.Contains(i)) Assert.False(bytes.ContainsAnyExcept((byte)0x5A), $"page {i} was not given back but changed");
            else if (OperatingSystem.IsLinux()) Assert.False(bytes.ContainsAnyExcept((byte)0), $"page {i} was given back but kept its bytes");
        }
        var reused = Enumerable.Range(0, given.Length).Select(_ => arena.Rent()).ToList();
        Assert.Equal(given.Select(i => (long)pages[i].Pointer).Order(), reused.Select(p => (long)p.Pointer).Order());
        Assert.Equal(2L * ScratchArena.SlabBytes, arena.ReservedBytes);
    }
}
