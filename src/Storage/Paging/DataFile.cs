using System.Diagnostics;
using Microsoft.Win32.SafeHandles;
using Storage.Platform;

namespace Storage.Paging;

/// <summary>
/// The data file: read through a memory map, written with positional vectored writes by the flusher
/// and by recovery. Grows on demand; a page is validated (number and checksum) the first time it is
/// read through the map.
/// </summary>
internal sealed unsafe class DataFile : IDisposable
{
    public const string FileName = "data.storage";

    private const long MinGrowthBytes = 1L << 20;
    private const long MaxGrowthBytes = 1L << 30;

    private readonly SafeFileHandle _handle;
    private readonly IFaultInjector? _faults;
    private readonly object _growLock = new();
    private readonly IDataFileWriter _writer;
    private DataFileMapping _mapping;
    private readonly PageBitmap _validated;
    private readonly PageResidency? _residency;
    private readonly bool _randomAccess;

    public DataFile(string path, SafeFileHandle handle, PlatformIo io, IFaultInjector? faults, bool randomAccess = false)
    {
        Path = path;
        _randomAccess = randomAccess;
        _handle = handle;
        _faults = faults;
        Io = io;
        var length = RandomAccess.GetLength(handle);
        if (length < 4 * PageLayout.PageSizeBytes)
        {
            throw new StorageCorruptedException($"The data file is {length} bytes long, too short to be an environment.", path, offsetBytes: length);
        }
        if (length % PageLayout.PageSizeBytes != 0)
        {
            // The engine only ever sizes the file in whole pages (whole MiB, in fact): a torn last page is damage from outside.
            throw new StorageCorruptedException($"The data file is {length} bytes long, not a whole number of {PageLayout.PageSizeBytes}-byte pages.", path, length / PageLayout.PageSizeBytes, length);
        }
        // Positioned reads of the file (its header slots) then read what they ask for, as faults on the map do.
        if (randomAccess && Posix.IsSupported) Posix.PosixFAdvise(handle.DangerousGetHandle(), 0, 0, Posix.FileAdviseRandom);
        _mapping = new DataFileMapping(handle, length, randomAccess);
        _validated = new PageBitmap(_mapping.PageCount);
        if (randomAccess && Posix.IsSupported) _residency = new PageResidency(_mapping.PageCount);
        _writer = io.CreateDataWriter();
    }

    /// <summary>The I/O backend the file is written through.</summary>
    public PlatformIo Io { get; }

    public string Path { get; }

    /// <summary>Opens the file; the handle is closed again if it is not a valid data file.</summary>
    public static DataFile Open(string path, PlatformIo io, IFaultInjector? faults, bool randomAccess = false)
    {
        var handle = FileIo.OpenReadWrite(path, create: false);
        try
        {
            return new DataFile(path, handle, io, faults, randomAccess);
        }
        catch
        {
            handle.Dispose();
            throw;
        }
    }

    public SafeFileHandle Handle => _handle;

    public long PageCount => Volatile.Read(ref _mapping).PageCount;

    /// <summary>The current mapping with a reference the caller must release.</summary>
    public DataFileMapping AcquireMapping()
    {
        while (true)
        {
            var mapping = Volatile.Read(ref _mapping);
            if (mapping.TryAddReference()) return mapping;
        }
    }

    /// <summary>
    /// Makes the file (and the map) cover at least <paramref name="pageCount"/> pages, with real blocks reserved for the
    /// new range: a full disk fails here (<see cref="StorageFullException"/>), on the commit that needs the space, and
    /// never later in the flusher's writes or in a store through the map. On failure the map is left as it was.
    /// </summary>
    public void EnsurePageCount(long pageCount)
    {
        if (pageCount <= PageCount) return;
        lock (_growLock)
        {
            var current = _mapping.LengthBytes;
            var required = pageCount * PageLayout.PageSizeBytes;
            if (required <= current) return;
            // An eighth at a time: few remaps, and at most an eighth of the file unused at the end.
            var growth = Math.Clamp(current / 8, MinGrowthBytes, MaxGrowthBytes);
            var least = (required + MinGrowthBytes - 1) / MinGrowthBytes * MinGrowthBytes;
            var target = Math.Max(least, (current + growth + MinGrowthBytes - 1) / MinGrowthBytes * MinGrowthBytes);
            try
            {
                try
                {
                    FileIo.Reserve(_handle, Path, current, target - current, _faults);
                }
                catch (StorageFullException) when (target > least)
                {
                    // Not room for the usual step: the least that serves, before giving up.
                    RestoreLength(current);
                    target = least;
                    FileIo.Reserve(_handle, Path, current, target - current, _faults);
                }
            }
            catch (StorageException)
            {
                RestoreLength(current);
                throw;
            }
            _faults?.AfterSetLength(Path, target);
            var next = new DataFileMapping(_handle, target, _randomAccess);
            _validated.Grow(next.PageCount);
            _residency?.Grow(next.PageCount);
            var old = _mapping;
            Volatile.Write(ref _mapping, next);
            old.Release();
        }
    }

    /// <summary>
    /// A reservation that failed part-way may have moved the end of the file by file-system blocks (ext4 does): back to
    /// the whole pages the map covers, so that the file stays a whole number of pages. Best effort: a longer file is only
    /// unused space.
    /// </summary>
    private void RestoreLength(long lengthBytes)
    {
        try
        {
            if (RandomAccess.GetLength(_handle) > lengthBytes) RandomAccess.SetLength(_handle, lengthBytes);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
        }
    }

    /// <summary>
    /// Whether a page has been read (and validated) through the map since the file was opened. A page read once is most
    /// likely still in the page cache, so read-ahead skips it; a page never read is asked for before it is touched.
    /// </summary>
    public bool HasBeenRead(long pageNumber) => _validated.Test(pageNumber);

    /// <summary>
    /// Before a page's first read through a random-access map (<see cref="StorageOptions.RandomAccessMap"/>), where the
    /// kernel reads only the faulted OS page: asks for the whole page in one request unless it is most likely cached.
    /// </summary>
    /// <remarks>Kept out of line: inlined, its system call would make every page read set up a native call frame.</remarks>
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    public void BeforeFirstRead(DataFileMapping mapping, byte* page, long pageNumber)
    {
        if (_residency is { } residency && !residency.IsResident(mapping, pageNumber)) DataFileMapping.WillNeed(page, PageLayout.PageSizeBytes);
    }

    /// <summary>
    /// Whether the page is most likely in the page cache: read since the open, written by the flusher, or found there
    /// when its region of the file was first asked about (<see cref="PageResidency"/>). Only kept for a random-access map.
    /// </summary>
    /// <param name="mapping">The caller's mapping (it holds a reference), which covers the page.</param>
    /// <param name="pageNumber">The page.</param>
    public bool ProbablyCached(DataFileMapping mapping, long pageNumber) =>
        HasBeenRead(pageNumber) || (_residency is { } residency && residency.IsResident(mapping, pageNumber));

    /// <summary>
    /// Checks, once per page, that a page read through the map says it is that page, matches its checksum, and
    /// was written by a transaction the reader's snapshot (<paramref name="snapshotTransactionId"/>) includes: the
    /// flusher never writes a version newer than the oldest snapshot, so a newer page is a future the journal lost.
    /// An overflow run's checksum covers the whole run, whose length its first page gives; <paramref name="mappedPages"/>
    /// bounds it (the run must lie inside the map).
    /// </summary>
    public void Validate(byte* page, long pageNumber, long mappedPages, long snapshotTransactionId)
    {
        if (_validated.Test(pageNumber)) return;

        var header = (PageHeader*)page;
        if (header->PageNumber != pageNumber)
        {
            throw new StorageCorruptedException($"Page says it is {header->PageNumber}, expected {pageNumber}.", Path, pageNumber, pageNumber * PageLayout.PageSizeBytes);
        }
        var runPages = 1L;
        if ((header->Flags & PageFlags.Overflow) != 0)
        {
            runPages = header->OverflowSizeBytes < 0 ? -1 : PageLayout.PagesForOverflow(header->OverflowSizeBytes);
            if (runPages < 1 || pageNumber + runPages > mappedPages)
            {
                throw new StorageCorruptedException($"Overflow page says its value is {header->OverflowSizeBytes} bytes, which does not fit the data file.", Path, pageNumber, pageNumber * PageLayout.PageSizeBytes);
            }
        }
        // On a random-access map each OS page would fault in on its own: ask for the rest of the run in one request.
        if (runPages > 1 && _randomAccess) DataFileMapping.WillNeed(page + PageLayout.PageSizeBytes, (runPages - 1) * PageLayout.PageSizeBytes);
        var expected = Crc32C.ComputePage(page, runPages * PageLayout.PageSizeBytes);
        if (header->Checksum != expected)
        {
            throw new StorageCorruptedException($"Page checksum mismatch (stored {header->Checksum:x8}, computed {expected:x8}).", Path, pageNumber, pageNumber * PageLayout.PageSizeBytes);
        }
        if (header->TransactionId > snapshotTransactionId)
        {
            throw new StorageCorruptedException(
                $"Page was written by transaction {header->TransactionId}, after the state being read (transaction {snapshotTransactionId}): the data file holds a change the journal no longer has.",
                Path, pageNumber, pageNumber * PageLayout.PageSizeBytes);
        }
        _validated.Set(pageNumber);
    }

    public int Read(long offsetBytes, Span<byte> buffer) => FileIo.Read(_handle, Path, buffer, offsetBytes);

    public void Write(long offsetBytes, ReadOnlySpan<byte> buffer)
    {
        FileIo.Write(_handle, Path, buffer, offsetBytes, _faults);
        _faults?.AfterWrite(Path, offsetBytes, buffer, durable: false);
    }

    /// <summary>
    /// Writes page versions sorted by page number through the backend, which merges adjacent ones into one
    /// vectored write each. The pages carry the checksum their commit stamped. Returns the number of write calls (runs).
    /// </summary>
    public int WriteSorted(IReadOnlyList<(long PageNumber, ScratchBuffer Buffer)> pages)
    {
#if DEBUG
        for (var i = 0; i < pages.Count; i++)
        {
            var header = (PageHeader*)pages[i].Buffer.Pointer;
            Debug.Assert(header->PageNumber == pages[i].PageNumber, "scratch page knows its own number");
            Debug.Assert(header->Checksum == Crc32C.ComputePage(pages[i].Buffer.Pointer, pages[i].Buffer.SizeBytes), "the commit stamped the page's checksum");
        }
#endif
        var runs = _writer.Write(_handle, Path, pages, _faults);
        if (_residency is { } residency)
        {
            foreach (var (pageNumber, buffer) in pages) residency.MarkResident(pageNumber, buffer.PageCount);
        }
        if (_faults is not null)
        {
            foreach (var (pageNumber, buffer) in pages)
            {
                for (long done = 0; done < buffer.SizeBytes; done += 1 << 30)
                {
                    var chunk = (int)Math.Min(buffer.SizeBytes - done, 1 << 30);
                    _faults.AfterWrite(Path, pageNumber * PageLayout.PageSizeBytes + done, new ReadOnlySpan<byte>(buffer.Pointer + done, chunk), durable: false);
                }
            }
        }
        return runs;
    }

    /// <summary>Stamps the transaction that changes a page and the page's checksum (over the whole run for an overflow value), at commit.</summary>
    public static void Stamp(ScratchBuffer buffer, long transactionId)
    {
        var header = (PageHeader*)buffer.Pointer;
        header->TransactionId = transactionId;
        header->Checksum = Crc32C.ComputePage(buffer.Pointer, buffer.SizeBytes);
    }

    public void Sync() => _writer.Sync(_handle, Path, _faults);

    /// <summary>Drops the environment's reference to the map; readers still holding one keep it alive.</summary>
    public void Dispose()
    {
        var mapping = Interlocked.Exchange(ref _mapping, null!);
        mapping?.Release();
        _writer.Dispose();
        _handle.Dispose();
    }
}
