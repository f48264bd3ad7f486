using Storage.Platform;

namespace Storage.Paging;

/// <summary>
/// Which data-file pages are most likely in the page cache, known without a system call per page: on a random-access
/// map the engine asks for a page before touching it only when it is not, because asking costs a system call (about
/// 2 µs on a virtual machine, as much as reading a warm leaf) and a page already cached needs no request. A region of
/// the file is read with one mincore() call the first time one of its pages is asked about; pages the flusher writes
/// are marked as it writes them. Advisory: a page evicted since is faulted in as the map's advice says, and a page
/// wrongly thought absent only costs a request.
/// </summary>
internal sealed unsafe class PageResidency
{
    /// <summary>Pages per mincore() call: 64 MiB of the file, 16 KiB of vector for 4 KiB OS pages.</summary>
    private const int RegionPagesShift = 13;

    private readonly PageBitmap _resident;
    private int[] _regionsRead;

    public PageResidency(long pageCount)
    {
        _resident = new PageBitmap(pageCount);
        _regionsRead = new int[(pageCount >> RegionPagesShift) + 1];
    }

    /// <summary>Makes room for a file grown to <paramref name="pageCount"/> pages; called under the data file's grow lock.</summary>
    public void Grow(long pageCount)
    {
        _resident.Grow(pageCount);
        var current = Volatile.Read(ref _regionsRead);
        var needed = (pageCount >> RegionPagesShift) + 1;
        if (needed <= current.Length) return;
        var regions = new int[needed];
        Array.Copy(current, regions, current.Length);
        Volatile.Write(ref _regionsRead, regions);
    }

    /// <summary>Whether the page is most likely cached; reads its region's residency first when nobody has yet.</summary>
    public bool IsResident(DataFileMapping mapping, long pageNumber)
    {
        var regions = Volatile.Read(ref _regionsRead);
        var region = pageNumber >> RegionPagesShift;
        if (region < regions.Length && Volatile.Read(ref regions[region]) == 0) ReadRegion(mapping, region, regions);
        return _resident.Test(pageNumber);
    }

    /// <summary>The pages are in the page cache now (just written).</summary>
    public void MarkResident(long pageNumber, long pageCount)
    {
        for (var page = pageNumber; page < pageNumber + pageCount; page++) _resident.Set(page);
    }

    private void ReadRegion(DataFileMapping mapping, long region, int[] regions)
    {
        var first = region << RegionPagesShift;
        var count = Math.Min(1L << RegionPagesShift, mapping.PageCount - first);
        if (count > 0 && Posix.IsSupported)
        {
            var osPageBytes = Environment.SystemPageSize;
            var lengthBytes = count << PageLayout.PageSizeShift;
            var vector = new byte[(lengthBytes + osPageBytes - 1) / osPageBytes];
            fixed (byte* v = vector)
            {
                if (Posix.MinCore(mapping.PagePointer(first), (nuint)lengthBytes, v) != 0) Array.Clear(vector);
            }
            for (long page = 0; page < count; page++)
            {
                // Resident when every OS page it spans is.
                var start = (page << PageLayout.PageSizeShift) / osPageBytes;
                var end = (((page + 1) << PageLayout.PageSizeShift) - 1) / osPageBytes;
                var resident = true;
                for (var os = start; os <= end && resident; os++) resident = (vector[os] & 1) != 0;
                if (resident) _resident.Set(first + page);
            }
        }
        Volatile.Write(ref regions[region], 1);
    }
}
