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

    private readonly Lock _growLock = new();
    private ulong[] _bits;
    private int[] _regionsRead;

    public PageResidency(long pageCount)
    {
        _bits = new ulong[(pageCount + 63) / 64];
        _regionsRead = new int[(pageCount >> RegionPagesShift) + 1];
    }

    /// <summary>Makes room for a file grown to <paramref name="pageCount"/> pages; called under the data file's grow lock.</summary>
    public void Grow(long pageCount)
    {
        lock (_growLock)
        {
            var bits = new ulong[(pageCount + 63) / 64];
            Array.Copy(_bits, bits, Math.Min(_bits.Length, bits.Length));
            var regions = new int[(pageCount >> RegionPagesShift) + 1];
            Array.Copy(_regionsRead, regions, Math.Min(_regionsRead.Length, regions.Length));
            Volatile.Write(ref _bits, bits);
            Volatile.Write(ref _regionsRead, regions);
        }
    }

    /// <summary>Whether the page is most likely cached; reads its region's residency first when nobody has yet.</summary>
    public bool IsResident(DataFileMapping mapping, long pageNumber)
    {
        var regions = Volatile.Read(ref _regionsRead);
        var region = pageNumber >> RegionPagesShift;
        if (region < regions.Length && Volatile.Read(ref regions[region]) == 0) ReadRegion(mapping, region, regions);
        var bits = Volatile.Read(ref _bits);
        var word = pageNumber >> 6;
        return word < bits.Length && (Volatile.Read(ref bits[word]) & (1UL << (int)(pageNumber & 63))) != 0;
    }

    /// <summary>The page is in the page cache now (just written, or just read).</summary>
    public void MarkResident(long pageNumber, long pageCount = 1)
    {
        var bits = Volatile.Read(ref _bits);
        for (var page = pageNumber; page < pageNumber + pageCount; page++)
        {
            var word = page >> 6;
            if (word < bits.Length) Interlocked.Or(ref bits[word], 1UL << (int)(page & 63));
        }
    }

    private void ReadRegion(DataFileMapping mapping, long region, int[] regions)
    {
        var first = region << RegionPagesShift;
        var count = Math.Min(1L << RegionPagesShift, mapping.PageCount - first);
        if (count > 0 && Posix.IsSupported)
        {
            var osPageBytes = Environment.SystemPageSize;
            var lengthBytes = count << PageLayout.PageSizeShift;
            var osPages = (int)((lengthBytes + osPageBytes - 1) / osPageBytes);
            var vector = new byte[osPages];
            fixed (byte* v = vector)
            {
                if (Posix.MinCore(mapping.PagePointer(first), (nuint)lengthBytes, v) != 0) Array.Clear(vector);
            }
            var bits = Volatile.Read(ref _bits);
            for (long page = 0; page < count; page++)
            {
                // Resident when every OS page it spans is.
                var start = (page << PageLayout.PageSizeShift) / osPageBytes;
                var end = (((page + 1) << PageLayout.PageSizeShift) - 1) / osPageBytes;
                var resident = true;
                for (var os = start; os <= end && resident; os++) resident = (vector[(int)os] & 1) != 0;
                if (!resident) continue;
                var pageNumber = first + page;
                var word = pageNumber >> 6;
                if (word < bits.Length) Interlocked.Or(ref bits[word], 1UL << (int)(pageNumber & 63));
            }
        }
        Volatile.Write(ref regions[region], 1);
    }
}
