using System.Diagnostics;
using System.Runtime.InteropServices;
using Storage.Paging;
using Storage.Platform;

namespace Storage.Scratch;

/// <summary>
/// Native memory for single scratch pages, carved out of <see cref="SlabBytes"/> slabs. One 8 KiB page aligned to
/// 4 KiB from the C allocator costs about 12 KiB of resident memory (measured: 40,000 pages took 475 MiB instead of
/// 312 MiB), because each aligned block leaves a fragment before it that nothing else fits in; a slab wastes nothing.
/// Pages given back for good (<see cref="Decommit"/>) are handed to the kernel with <c>MADV_DONTNEED</c>, so resident
/// memory falls after a peak, and are reused (zero-filled again by the kernel) before the arena grows.
/// </summary>
internal sealed unsafe class ScratchArena : IDisposable
{
    /// <summary>256 pages; one allocation each, which the C allocator maps directly.</summary>
    public const int SlabBytes = 2 << 20;

    private const int PagesPerSlab = SlabBytes / PageLayout.PageSizeBytes;

    private readonly object _lock = new();
    private readonly List<nint> _slabs = [];
    private readonly Stack<ScratchBuffer> _decommitted;
    private byte* _next;
    private int _leftInSlab;
    private bool _disposed;

    /// <param name="pagesExpected">Pages the list of pages given back to the kernel is sized for up front.</param>
    public ScratchArena(int pagesExpected = 0) => _decommitted = new Stack<ScratchBuffer>(pagesExpected);

    /// <summary>Bytes of slabs allocated (resident or handed back).</summary>
    public long ReservedBytes
    {
        get
        {
            lock (_lock) return (long)_slabs.Count * SlabBytes;
        }
    }

    /// <summary>A page not in use: one handed back earlier, else the next of the current slab, else a new slab's first.</summary>
    public ScratchBuffer Rent()
    {
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_decommitted.TryPop(out var reused)) return Touched(reused);
            if (_leftInSlab == 0)
            {
                var slab = (byte*)NativeMemory.AlignedAlloc(SlabBytes, 4096);
                _slabs.Add((nint)slab);
                _next = slab;
                _leftInSlab = PagesPerSlab;
            }
            var page = new ScratchBuffer(_next, this);
            _next += PageLayout.PageSizeBytes;
            _leftInSlab--;
            return Touched(page);
        }
    }

    /// <summary>
    /// Faults a page the kernel has not backed yet in for writing, one store per OS page. The runtime's copy routine
    /// reads its destination's first byte before copying a page: on memory not backed yet that read maps the shared
    /// zero page, and the copy's first store then faults again to replace it, which flushes the TLB of the other
    /// processors running the process (an interprocessor interrupt, and a wait for it, each time).
    /// </summary>
    private static ScratchBuffer Touched(ScratchBuffer page)
    {
        for (var offset = 0; offset < PageLayout.PageSizeBytes; offset += OsPageBytes) page.Pointer[offset] = 0;
        return page;
    }

    /// <summary>The smallest OS page size of the platforms the engine runs on.</summary>
    private const int OsPageBytes = 4096;

    /// <summary>
    /// Pages the pool does not keep: their memory goes back to the kernel until they are rented again. Sorted by
    /// address, neighbours in a slab go back in one call: each call costs a system call and, with the memory mapped on
    /// other processors, a TLB shootdown, so thousands of pages one by one would take tens of milliseconds.
    /// </summary>
    public void Decommit(List<ScratchBuffer> pages)
    {
        if (pages.Count == 0) return;
        pages.Sort(static (a, b) => ((nint)a.Pointer).CompareTo((nint)b.Pointer));
        for (var i = 0; i < pages.Count;)
        {
            Debug.Assert(ReferenceEquals(pages[i].Arena, this), "a page goes back to its own arena");
            var start = pages[i].Pointer;
            var end = start + PageLayout.PageSizeBytes;
            var slabEnd = SlabEnd(start);
            var j = i + 1;
            while (j < pages.Count && pages[j].Pointer == end && end < slabEnd)
            {
                end += PageLayout.PageSizeBytes;
                j++;
            }
            // Advisory: where the kernel refuses (or elsewhere than Linux) the pages simply stay resident.
            if (Posix.IsSupported) Posix.MAdvise(start, (nuint)(end - start), Posix.AdviseDontNeed);
            i = j;
        }
        lock (_lock)
        {
            if (_disposed) return;
            foreach (var page in pages) _decommitted.Push(page);
        }
    }

    /// <summary>The end of the slab holding <paramref name="page"/>: a run of pages never crosses it (slabs are separate allocations).</summary>
    private byte* SlabEnd(byte* page)
    {
        lock (_lock)
        {
            foreach (var slab in _slabs)
            {
                var start = (byte*)slab;
                if (page >= start && page < start + SlabBytes) return start + SlabBytes;
            }
        }
        return page + PageLayout.PageSizeBytes;
    }

    /// <summary>At close, once nothing points into the slabs any more.</summary>
    public void Dispose()
    {
        lock (_lock)
        {
            if (_disposed) return;
            _disposed = true;
            foreach (var page in _decommitted) page.Release();
            _decommitted.Clear();
            foreach (var slab in _slabs) NativeMemory.AlignedFree((void*)slab);
            _slabs.Clear();
        }
    }
}
