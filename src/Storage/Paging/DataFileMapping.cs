using System.Diagnostics;
using System.IO.MemoryMappedFiles;
using Microsoft.Win32.SafeHandles;
using Storage.Platform;

namespace Storage.Paging;

/// <summary>
/// A read-only memory map of the data file at one size. Reference counted: the environment holds one
/// reference to the current mapping and every transaction that reads through it holds one, so growing
/// the file (which makes a new, larger mapping) never unmaps memory a reader still points into.
/// </summary>
internal sealed unsafe class DataFileMapping
{
    private readonly MemoryMappedFile _file;
    private readonly MemoryMappedViewAccessor _view;
    private int _references = 1;

    /// <summary>Pages per read-ahead request: 2 MiB, the piece Linux issues its forced read-ahead in.</summary>
    private const long MaxPrefetchPages = (2 << 20) / PageLayout.PageSizeBytes;

    public DataFileMapping(SafeFileHandle handle, long lengthBytes, bool randomAccess = false)
    {
        Debug.Assert(lengthBytes > 0 && lengthBytes % PageLayout.PageSizeBytes == 0, "mappings cover whole pages");
        _file = MemoryMappedFile.CreateFromFile(handle, mapName: null, lengthBytes, MemoryMappedFileAccess.Read, HandleInheritability.None, leaveOpen: true);
        _view = _file.CreateViewAccessor(0, lengthBytes, MemoryMappedFileAccess.Read);
        byte* pointer = null;
        _view.SafeMemoryMappedViewHandle.AcquirePointer(ref pointer);
        Base = pointer + _view.PointerOffset;
        LengthBytes = lengthBytes;
        PageCount = lengthBytes >> PageLayout.PageSizeShift;
        // Advisory: a kernel that refuses it reads ahead as it would anyway.
        if (randomAccess && Posix.IsSupported) Posix.MAdvise(Base, (nuint)lengthBytes, Posix.AdviseRandom);
    }

    /// <summary>
    /// Asks for a range that is about to be touched, in one request and without waiting (MADV_WILLNEED; the range is
    /// inside a mapping, whose base is OS-page aligned, and engine pages are a multiple of OS pages). Used on a
    /// random-access map, where touching the range would fault each OS page in with a read of its own.
    /// </summary>
    public static void WillNeed(byte* address, long lengthBytes)
    {
        if (Posix.IsSupported) Posix.MAdvise(address, (nuint)lengthBytes, Posix.AdviseWillNeed);
    }

    public byte* Base { get; }

    public long LengthBytes { get; }

    public long PageCount { get; }

    public byte* PagePointer(long pageNumber)
    {
        Debug.Assert(pageNumber >= 0 && pageNumber < PageCount, "callers check the page is inside the mapping");
        return Base + (pageNumber << PageLayout.PageSizeShift);
    }

    /// <summary>
    /// Asks the kernel to start reading a run of pages that is about to be used, without waiting for it
    /// (MADV_WILLNEED, through the native layer when it is loaded). Advisory: a refusal changes nothing.
    /// </summary>
    public void Prefetch(long firstPage, long pageCount)
    {
        Debug.Assert(firstPage >= 0 && pageCount > 0 && firstPage + pageCount <= PageCount, "callers clip runs to the mapping");
        var native = Pal.IsAvailable;
        if (!native && !Posix.IsSupported) return;
        // Linux reads at most the read-ahead window per call (read_ahead_kb), so long runs go in pieces.
        for (long chunk; pageCount > 0; firstPage += chunk, pageCount -= chunk)
        {
            chunk = Math.Min(pageCount, MaxPrefetchPages);
            if (native) Pal.Prefetch(Base, firstPage, chunk, PageLayout.PageSizeBytes);
            // The mapping's base is OS-page aligned and engine pages are a multiple of OS pages.
            else Posix.MAdvise(PagePointer(firstPage), (nuint)(chunk << PageLayout.PageSizeShift), Posix.AdviseWillNeed);
        }
    }

    public bool TryAddReference()
    {
        while (true)
        {
            var current = Volatile.Read(ref _references);
            if (current == 0) return false;
            if (Interlocked.CompareExchange(ref _references, current + 1, current) == current) return true;
        }
    }

    public void Release()
    {
        var remaining = Interlocked.Decrement(ref _references);
        Debug.Assert(remaining >= 0, "a mapping is released once per reference");
        if (remaining != 0) return;
        _view.SafeMemoryMappedViewHandle.ReleasePointer();
        _view.Dispose();
        _file.Dispose();
    }
}
