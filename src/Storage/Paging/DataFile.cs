using Microsoft.Win32.SafeHandles;
using Storage.Faults;
using Storage.Platform;
using Storage.Scratch;

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
    /// <summary>Guards the map's replacement and the writer's page count (held briefly, never across I/O).</summary>
    private readonly object _growLock = new();

    /// <summary>Serialises changes of the file's length (growth and shrinking), which may wait for the file system.</summary>
    private readonly object _resizeLock = new();
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
        // On Windows the native writer keeps several overlapped writes of a flush in flight, which needs a handle
        // opened for overlapped I/O (the managed calls on it wait for theirs).
        var handle = FileIo.OpenReadWrite(path, create: false, overlapped: OperatingSystem.IsWindows());
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
    public void EnsurePageCount(long pageCount) => EnsurePageCount(pageCount, aheadOfCuts: -1);

    /// <summary>
    /// As <see cref="EnsurePageCount(long)"/>. With <paramref name="aheadOfCuts"/> not negative (a growth ahead of need):
    /// only while the file has been cut that many times, and by half the usual step, so that growing ahead reserves no
    /// more room at the end than growing on demand did.
    /// </summary>
    private void EnsurePageCount(long pageCount, long aheadOfCuts)
    {
        if (pageCount <= PageCount) return;
        // Reserving blocks is a file system journal commit, which can wait tens of ms behind the data file's writeback:
        // done under the resize lock only, so that a commit that needs no growth never waits for one in progress.
        lock (_resizeLock)
        {
            // A growth asked for ahead of need before the file was cut would undo the cut; at a close, the cut to come.
            if (aheadOfCuts >= 0 && (aheadOfCuts != _cuts || _growingAheadStopped)) return;
            var current = _mapping.LengthBytes;
            var required = pageCount * PageLayout.PageSizeBytes;
            if (required <= current) return;
            var least = (required + MinGrowthBytes - 1) / MinGrowthBytes * MinGrowthBytes;
            var step = aheadOfCuts >= 0 ? AheadMargin(current) : GrowthStep(current);
            var target = Math.Max(least, (current + step + MinGrowthBytes - 1) / MinGrowthBytes * MinGrowthBytes);
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
            DataFileMapping old;
            lock (_growLock)
            {
                _validated.Grow(next.PageCount);
                _residency?.Grow(next.PageCount);
                old = _mapping;
                Volatile.Write(ref _mapping, next);
            }
            old.Release();
            _growing = true;
        }
    }

    /// <summary>
    /// A 128th of the file at a time, at least 1 MiB: at most that much reserved unused at the end (the file stays within
    /// 1% of what it holds past 128 MiB), for about 300 remaps to grow tenfold, each a reservation and a new map.
    /// </summary>
    private static long GrowthStep(long currentBytes) => Math.Clamp(currentBytes / 128, MinGrowthBytes, MaxGrowthBytes);

    /// <summary>
    /// The room <see cref="GrowAheadIfLow"/> keeps past the writer's pages, and grows by: half a growth step, and at least
    /// <see cref="MinAheadBytes"/>.
    /// </summary>
    private static long AheadMargin(long currentBytes) => Math.Max(GrowthStep(currentBytes) / 2, MinAheadBytes);

    /// <summary>
    /// Room enough for commits to go on while a reservation waits behind the data file's writeback (tens of ms during a
    /// flush; W1 takes 512 KiB in about 20 ms, which a margin of half a 1 MiB step left commits waiting 7-20 ms).
    /// </summary>
    private const long MinAheadBytes = 4L << 20;

    /// <summary>
    /// After a commit: when the room left past <paramref name="nextPageNumber"/> is under <see cref="AheadMargin"/>, grows the
    /// file by that much on a pool thread, so that commits seldom grow it themselves (a reservation can wait tens of ms
    /// behind the data file's writeback). A commit that still finds too little room grows the file itself, and fails
    /// there if the disk is full; a failure here only leaves that to it. Called by the writer only, so one growth runs
    /// at a time.
    /// </summary>
    public void GrowAheadIfLow(long nextPageNumber)
    {
        if (!_growing || _growingAheadStopped) return;
        var length = Volatile.Read(ref _mapping).LengthBytes;
        var wanted = nextPageNumber * PageLayout.PageSizeBytes + AheadMargin(length);
        if (wanted <= length || _growAhead is { IsCompleted: false }) return;
        StartGrowingAhead((wanted + PageLayout.PageSizeBytes - 1) / PageLayout.PageSizeBytes, Volatile.Read(ref _cuts));
    }

    /// <summary>Apart from <see cref="GrowAheadIfLow"/>, so that the closure is made only when a growth starts, not on every commit.</summary>
    private void StartGrowingAhead(long pageCount, long cuts)
    {
        _growAhead = Task.Run(() =>
        {
            try
            {
                BeforeGrowingAhead?.Invoke();
                EnsurePageCount(pageCount, cuts);
            }
            catch (Exception e) when (e is StorageException or IOException or ObjectDisposedException)
            {
            }
        });
    }

    /// <summary>
    /// Whether the file grew since it was opened or last cut: only a growing file is grown ahead (<see cref="GrowAheadIfLow"/>),
    /// so that one cut down after space came back is not lengthened again before it needs to be.
    /// </summary>
    private volatile bool _growing;

    /// <summary>How many times <see cref="TryShrink"/> cut the file (changed under the resize lock).</summary>
    private long _cuts;

    /// <summary>
    /// Waits for a growth started by <see cref="GrowAheadIfLow"/> to end, if one runs, without running it on this thread
    /// (as <see cref="Task.Wait()"/> may, for a task not started yet).
    /// </summary>
    internal void WaitForGrowthAhead()
    {
        if (_growAhead is not { } growth) return;
        if (!growth.IsCompleted) WaitingForGrowthAhead?.Invoke();
        ((IAsyncResult)growth).AsyncWaitHandle.WaitOne();
    }

    /// <summary>
    /// At a clean close, before the last sync cuts the file to what it needs: no growth ahead starts after this, and one
    /// that has not reached its reservation yet does nothing. Without it a growth that the thread pool started only after
    /// that cut would leave the closed file a margin longer. Called with the write lock held, so no commit asks for
    /// another meanwhile.
    /// </summary>
    public void StopGrowingAhead()
    {
        _growingAheadStopped = true;
        WaitForGrowthAhead();
    }

    private volatile bool _growingAheadStopped;

    /// <summary>Test seam: runs on the pool thread as a growth ahead starts, before it takes the resize lock.</summary>
    internal Action? BeforeGrowingAhead { get; set; }

    /// <summary>Test seam: runs when someone starts waiting for a growth ahead that has not ended.</summary>
    internal Action? WaitingForGrowthAhead { get; set; }

    /// <summary>The last growth started by <see cref="GrowAheadIfLow"/>.</summary>
    private Task? _growAhead;

    /// <summary>Whether a growth started by <see cref="GrowAheadIfLow"/> has not ended yet (for tests).</summary>
    internal bool GrowingAhead => _growAhead is { IsCompleted: false };

    /// <summary>
    /// As <see cref="EnsurePageCount(long)"/>, for a commit: also remembers the page count the writer's newest state needs, which
    /// <see cref="TryShrink"/> never cuts below.
    /// </summary>
    public void EnsurePageCountForCommit(long pageCount)
    {
        lock (_growLock) _writerPageCount = Math.Max(_writerPageCount, pageCount);
        EnsurePageCount(pageCount);
    }

    /// <summary>
    /// The page count the writer's newest state needs: raised by <see cref="EnsurePageCountForCommit"/> as a commit asks for
    /// room, and set by <see cref="NoteAppended"/> once it cannot fail. A commit that gave pages at the end back and then
    /// failed leaves it where it was: the newest state is still the one before.
    /// </summary>
    private long _writerPageCount;

    /// <summary>A commit asking for <paramref name="pageCount"/> pages was appended: its state is the newest (the write lock is held).</summary>
    /// <remarks>
    /// No lock: commits raise and set the count under the write lock, one at a time, and this only lowers it to what the
    /// newest state needs, so a cut that reads the count before this keeps more than it must, never less.
    /// </remarks>
    public void NoteAppended(long pageCount) => Volatile.Write(ref _writerPageCount, pageCount);

    /// <summary>The file is cut only when at least this share (1/n) of it, and at least <see cref="MinShrinkBytes"/>, lies past what is needed.</summary>
    private const int ShrinkShare = 8;

    private const long MinShrinkBytes = 2L << 20;

    /// <summary>
    /// Cuts the file down to what the states in use need (<paramref name="syncedPageCount"/>, the synced state's, and the
    /// newest a commit asked for), rounded up to whole MiB, when a large share of it lies past that (the end of the file
    /// was given back). Called by the flusher after a sync, so no flush writes meanwhile; readers' maps of the longer file
    /// stay valid for the pages their snapshots use, which all lie below the cut. Best effort: a failure leaves the file
    /// longer. Returns the bytes cut. At a clean close (<paramref name="closing"/>) any whole MiB past what is needed goes:
    /// the room growth reserved ahead is reserved again when the environment next grows.
    /// </summary>
    public long TryShrink(long syncedPageCount, bool closing = false)
    {
        lock (_resizeLock)
        lock (_growLock)
        {
            var current = _mapping.LengthBytes;
            var needed = Math.Max(syncedPageCount, _writerPageCount) * PageLayout.PageSizeBytes;
            var target = Math.Max(4L * PageLayout.PageSizeBytes, (needed + MinGrowthBytes - 1) / MinGrowthBytes * MinGrowthBytes);
            // A growing file keeps up to two margins (and a MiB of rounding) past its pages: that room is not cut while it grows.
            var keep = Math.Max(MinShrinkBytes, current / ShrinkShare);
            if (_growing) keep = Math.Max(keep, 2 * AheadMargin(current) + MinGrowthBytes);
            if (current <= target || (!closing && current - target < keep)) return 0;
            try
            {
                _faults?.BeforeResize(Path, target);
                RandomAccess.SetLength(_handle, target);
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException or StorageException)
            {
                return 0;
            }
            _faults?.AfterSetLength(Path, target);
            var next = new DataFileMapping(_handle, target, _randomAccess);
            var old = _mapping;
            Volatile.Write(ref _mapping, next);
            old.Release();
            _growing = false;
            Volatile.Write(ref _cuts, _cuts + 1);
            return current - target;
        }
    }

    /// <summary>
    /// Pages whose blocks were given back (<see cref="PunchHoles"/>) or may have been (free when the file was opened): a
    /// commit that takes one into use reserves its blocks again (<see cref="RefillHoles"/>). Used by the write-lock holder only.
    /// </summary>
    private ulong[] _holes = [];

    /// <summary>Whether punching holes works on this file system; cleared the first time it does not.</summary>
    private bool _canPunch = true;

    /// <summary>Whether punching holes may work here (it has not been refused yet).</summary>
    public bool CanPunch => _canPunch;

    /// <summary>The possible-hole bits of the 64 pages from <paramref name="firstPage"/> (a multiple of 64).</summary>
    public ulong HolesIn(long firstPage) => (firstPage >> 6) < _holes.Length ? _holes[firstPage >> 6] : 0;

    /// <summary>Whether any page is marked as a possible hole.</summary>
    public bool MayHaveHoles { get; private set; }

    /// <summary>Bytes given back by punching holes since open.</summary>
    public long PunchedBytes { get; private set; }

    /// <summary>Marks pages as possible holes (pages free when the environment opens).</summary>
    public void MarkHoles(long firstPage, long count)
    {
        if (count <= 0) return;
        var end = firstPage + count;
        if ((end + 63) / 64 > _holes.Length) Array.Resize(ref _holes, (int)Math.Max((end + 63) / 64, _holes.Length * 2L));
        for (var p = firstPage; p < end; p++) _holes[p >> 6] |= 1UL << (int)(p & 63);
        MayHaveHoles = true;
    }

    /// <summary>Marks the pages of <paramref name="bits"/> (one per page from <paramref name="firstPage"/>, a multiple of 64) as possible holes.</summary>
    public void MarkHoleWord(long firstPage, ulong bits)
    {
        if (bits == 0) return;
        var word = firstPage >> 6;
        if (word >= _holes.Length) Array.Resize(ref _holes, (int)Math.Max(word + 1, _holes.Length * 2L));
        _holes[word] |= bits;
        MayHaveHoles = true;
    }

    /// <summary>Whether any page of the run is marked as a possible hole.</summary>
    public bool IsHole(long firstPage, long count)
    {
        for (var p = firstPage; p < firstPage + count; p++)
        {
            if ((p >> 6) < _holes.Length && (_holes[p >> 6] & (1UL << (int)(p & 63))) != 0) return true;
        }
        return false;
    }

    /// <summary>
    /// Gives the run's blocks back to the file system (the pages are free in every state that can still be read from the
    /// file). False, and never again, when the file system cannot; failures are left to the caller.
    /// </summary>
    public bool PunchHoles(long firstPage, long count)
    {
        if (!_canPunch) return false;
        var offset = firstPage * PageLayout.PageSizeBytes;
        var length = count * PageLayout.PageSizeBytes;
        if (!FileIo.PunchHole(_handle, Path, offset, length, _faults))
        {
            _canPunch = false;
            return false;
        }
        if (_faults is not null)
        {
            // To the seam a hole is zeros written: after a power cut the range holds either.
            for (long done = 0; done < length; done += ZeroChunk.Length)
            {
                _faults.AfterWrite(Path, offset + done, ZeroChunk.AsSpan(0, (int)Math.Min(ZeroChunk.Length, length - done)), durable: false);
            }
        }
        MarkHoles(firstPage, count);
        PunchedBytes += length;
        return true;
    }

    private static readonly byte[] ZeroChunk = new byte[1 << 20];

    /// <summary>
    /// A commit takes pages that may be holes into use: their blocks are reserved again first, so that a full disk fails
    /// this commit (<see cref="StorageFullException"/>) and never the flusher's write of them later.
    /// </summary>
    public void RefillHoles(long firstPage, long count)
    {
        FileIo.Reserve(_handle, Path, firstPage * PageLayout.PageSizeBytes, count * PageLayout.PageSizeBytes, _faults);
        for (var p = firstPage; p < firstPage + count; p++)
        {
            if ((p >> 6) < _holes.Length) _holes[p >> 6] &= ~(1UL << (int)(p & 63));
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
            if (pages[i].Buffer.IsView) continue;
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

    /// <summary>
    /// Writes the dirty pages out a MiB at a time, waiting for each step (<see cref="FileIo.WriteBackInSteps"/>), before a
    /// flush's sync: commits' journal writes then queue behind one step, never behind all of a flush's pages.
    /// </summary>
    public void WriteBackInSteps() => FileIo.WriteBackInSteps(_handle, Path, PageCount * PageLayout.PageSizeBytes, WriteBackStepBytes);

    /// <summary>Dirty bytes handed to the device at once by <see cref="WriteBackInSteps"/>: a few ms of this disk's writes.</summary>
    private const long WriteBackStepBytes = 1L << 20;

    /// <summary>Drops the environment's reference to the map; readers still holding one keep it alive.</summary>
    public void Dispose()
    {
        // A growth ahead still running uses the handle: it ends on its own (its failures are swallowed).
        WaitForGrowthAhead();
        var mapping = Interlocked.Exchange(ref _mapping, null!);
        mapping?.Release();
        _writer.Dispose();
        _handle.Dispose();
    }
}
