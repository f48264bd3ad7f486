using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Storage.Allocation;
using Storage.Commit;
using Storage.Paging;
using Storage.Scratch;
using Storage.State;

namespace Storage.Transactions;

/// <summary>
/// A transaction's view of pages: its snapshot's versions from the page table or the memory-mapped data
/// file, and, for the writer, private copy-on-write copies in scratch memory.
/// </summary>
internal sealed unsafe class PageTransaction : ITreePageStore, IPageAllocationTarget
{
    private readonly ReaderTable _readers;
    private readonly WriterContext? _writer;
    private readonly Dictionary<long, DirtyPage>? _dirty;
    private readonly PageTable _pageTable;
    private readonly DataFile _dataFile;
    private DataFileMapping? _mapping;
    private List<DataFileMapping>? _olderMappings;
    private ReaderTable.Slot? _slot;

    /// <summary>A transaction's view of pages over the snapshot <paramref name="state"/> that <paramref name="slot"/> pins; <paramref name="writer"/> for the write transaction.</summary>
    public PageTransaction(ReaderTable readers, PageTable pageTable, DataFile dataFile, ReaderTable.Slot slot, EnvironmentState state, WriterContext? writer)
    {
        _readers = readers;
        _writer = writer;
        _slot = slot;
        State = state;
        _dirty = writer?.DirtyPages;
        _pageTable = pageTable;
        _dataFile = dataFile;
        _mapping = _dataFile.AcquireMapping();
        NextPageNumber = state.NextPageNumber;
    }

    public EnvironmentState State { get; }

    /// <summary>Whether the reader limit policy asked this transaction to end (at its next call, on its own thread).</summary>
    public bool EndRequested => _slot is { } slot && slot.EndRequested;


    public bool IsWritable => _dirty is not null;

    /// <summary>A write transaction's trees share the environment's working arrays (write transactions run one at a time).</summary>
    public Trees.TreeWorkspace? Workspace => _writer?.Workspace;

    public long NextPageNumber { get; set; }

    public Dictionary<long, DirtyPage> Dirty => _dirty!;

    public byte* GetPage(long pageNumber)
    {
        if (_dirty is not null)
        {
            ref var dirty = ref CollectionsMarshal.GetValueRefOrNullRef(_dirty, pageNumber);
            if (!Unsafe.IsNullRef(ref dirty))
            {
                if (dirty.IsFreed) ThrowFreedPage(pageNumber);
                return dirty.Buffer.Pointer;
            }
        }
        return GetCommitted(pageNumber, 1);
    }

    public byte* PeekPage(long pageNumber, out bool firstRead)
    {
        firstRead = false;
        if (_dirty is not null && _dirty.TryGetValue(pageNumber, out var dirty))
        {
            return dirty.IsFreed ? null : dirty.Buffer.Pointer;
        }
        if (pageNumber < 2 || pageNumber >= State.NextPageNumber) return null;
        if (!_pageTable.IsEmpty && _pageTable.TryGetPage(pageNumber, State.TransactionId, out var version, out _)) return version;
        var mapping = _mapping!;
        if (pageNumber >= mapping.PageCount) return null;
        firstRead = !_dataFile.HasBeenRead(pageNumber);
        return mapping.PagePointer(pageNumber);
    }

    public byte* GetPages(long firstPageNumber, int count)
    {
        if (_dirty is not null)
        {
            ref var dirty = ref CollectionsMarshal.GetValueRefOrNullRef(_dirty, firstPageNumber);
            if (!Unsafe.IsNullRef(ref dirty))
            {
                if (dirty.IsFreed || dirty.Buffer.PageCount < count) ThrowFreedPage(firstPageNumber);
                return dirty.Buffer.Pointer;
            }
        }
        return GetCommitted(firstPageNumber, count);
    }

    private byte* GetCommitted(long pageNumber, int count)
    {
        if (pageNumber < 2 || count < 1 || pageNumber + count > State.NextPageNumber) ThrowOutside(pageNumber);
        if (!_pageTable.IsEmpty && _pageTable.TryGetPage(pageNumber, State.TransactionId, out var version, out var versionPages))
        {
            if (versionPages < count) ThrowOutside(pageNumber);
            return version;
        }
        var mapping = _mapping!;
        if (pageNumber + count > mapping.PageCount) mapping = UseNewerMapping(pageNumber + count);
        var page = mapping.PagePointer(pageNumber);
        PageLayout.PrefetchHead(page);
        // One test on the hot path: a page read before was checked then, and is most likely cached.
        var firstRead = !_dataFile.HasBeenRead(pageNumber);
        if (firstRead) _dataFile.BeforeFirstRead(mapping, page, pageNumber);
        var header = (PageHeader*)page;
        if ((header->Flags & PageFlags.Overflow) != 0 && header->OverflowSizeBytes > 0)
        {
            // The run's checksum covers all its pages, which may reach past the map this transaction started with.
            var runEnd = pageNumber + PageLayout.PagesForOverflow(header->OverflowSizeBytes);
            if (runEnd > mapping.PageCount && runEnd <= State.NextPageNumber)
            {
                mapping = UseNewerMapping(runEnd);
                page = mapping.PagePointer(pageNumber);
            }
        }
        if (firstRead) _dataFile.Validate(page, pageNumber, mapping.PageCount, State.TransactionId);
        return page;
    }

    /// <summary>
    /// Starts reading the data-file pages of <paramref name="runs"/> that this transaction would read from the
    /// map (not its own changes, not versions still in scratch), sorted, with touching runs merged into one request.
    /// </summary>
    public void Prefetch(Span<PageRun> runs) => Request(runs, skipCached: false);

    /// <summary>
    /// As <see cref="Prefetch"/>, for the pages a cursor is about to reach, leaving out those most likely cached
    /// (<see cref="DataFile.ProbablyCached"/>): a scan over warm pages makes no system call per page.
    /// </summary>
    public void ReadAhead(Span<PageRun> runs) => Request(runs, skipCached: true);

    private void Request(Span<PageRun> runs, bool skipCached)
    {
        var mapping = _mapping!;
        runs.Sort();
        long start = 0;
        long end = 0;
        foreach (var run in runs)
        {
            if (run.Count < 1 || run.First < 2 || run.End > mapping.PageCount || IsInMemory(run.First)) continue;
            if (skipCached && _dataFile.ProbablyCached(mapping, run.First) && _dataFile.ProbablyCached(mapping, run.End - 1)) continue;
            if (run.First <= end && end > start)
            {
                end = Math.Max(end, run.End);
                continue;
            }
            if (end > start) mapping.Prefetch(start, end - start);
            start = run.First;
            end = run.End;
        }
        if (end > start) mapping.Prefetch(start, end - start);
    }

    private bool IsInMemory(long pageNumber) =>
        (_dirty is not null && _dirty.ContainsKey(pageNumber)) ||
        (!_pageTable.IsEmpty && _pageTable.TryGetPage(pageNumber, State.TransactionId, out _, out _));

    /// <summary>The file grew since this transaction began; pages past the old map are in the current one.</summary>
    private DataFileMapping UseNewerMapping(long requiredPages)
    {
        var current = _dataFile.AcquireMapping();
        if (requiredPages > current.PageCount)
        {
            current.Release();
            throw new StorageCorruptedException($"Page {requiredPages - 1} is past the end of the data file ({_dataFile.PageCount} pages).", _dataFile.Path, requiredPages - 1);
        }
        (_olderMappings ??= []).Add(_mapping!);
        _mapping = current;
        return current;
    }

    /// <summary>A writable copy of the page; its writes are not recorded, so the commit compares all of it.</summary>
    public byte* ModifyPage(long pageNumber)
    {
        var page = ModifyPage(pageNumber, out var lines);
        if (lines != null) WrittenLines.MarkAll(lines);
        return page;
    }

    /// <summary>
    /// A writable copy of the page, and the map where the caller records the lines it writes (null for a page this
    /// transaction created, which is compared whole).
    /// </summary>
    public byte* ModifyPage(long pageNumber, out ulong* writtenLines) => ModifyPage(pageNumber, null, out writtenLines);

    /// <inheritdoc cref="ITreePageStore.ModifyPage(long, byte*, out ulong*)"/>
    public byte* ModifyPage(long pageNumber, byte* current, out ulong* writtenLines)
    {
        var dirtyPages = _dirty ?? throw new InvalidOperationException("A read transaction cannot change pages.");
        ref var dirty = ref CollectionsMarshal.GetValueRefOrAddDefault(dirtyPages, pageNumber, out var exists);
        if (exists)
        {
            if (dirty.IsFreed) ThrowFreedPage(pageNumber);
            writtenLines = dirty.Lines;
            return dirty.Buffer.Pointer;
        }
        try
        {
            // One copy in CopyTimingInterval is timed and counts for them all: reading the clock around every copy cost
            // W1 2-3% of its transaction time.
            var timed = (++_writer!.PageCopies & (CopyTimingInterval - 1)) == 0;
            var started = timed ? Diagnostics.CommitProfile.Now() : 0;
            // Not being in the dirty set, the page the caller read is the committed version this transaction sees.
            var original = current != null ? current : GetCommitted(pageNumber, 1);
            var buffer = _writer.Scratch.Rent(1);
            Buffer.MemoryCopy(original, buffer.Pointer, PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
            writtenLines = _writer.Lines.Rent();
            dirty = new DirtyPage { Buffer = buffer, Original = original, Lines = writtenLines };
            if (timed) PageCopyTicks += (Diagnostics.CommitProfile.Now() - started) * CopyTimingInterval;
            return buffer.Pointer;
        }
        catch
        {
            dirtyPages.Remove(pageNumber);
            throw;
        }
    }

    /// <summary>
    /// Time spent copying pages on their first change, estimated from one copy in <see cref="CopyTimingInterval"/> (the
    /// commit adds it to the profile once).
    /// </summary>
    public long PageCopyTicks { get; set; }

    internal const int CopyTimingInterval = 8;

    public long AllocatePages(int count, long nearPageNumber, out byte* firstPage)
    {
        var pageNumber = _writer!.FreeSpace.Allocate(this, count, nearPageNumber);
        for (var p = pageNumber; p < pageNumber + count; p++) CheckNotInUse(p);
        firstPage = CreatePages(pageNumber, count);
        return pageNumber;
    }

    public long AllocatePagesBelow(int count, long ceiling, out byte* firstPage)
    {
        var pageNumber = _writer!.FreeSpace.AllocateBelow(this, count, ceiling);
        if (pageNumber < 0)
        {
            firstPage = null;
            return -1;
        }
        for (var p = pageNumber; p < pageNumber + count; p++) CheckNotInUse(p);
        firstPage = CreatePages(pageNumber, count);
        return pageNumber;
    }

    /// <summary>The write transaction this store belongs to (it knows the roots of the trees it opened).</summary>
    public WriteTransaction? Owner { get; set; }

    /// <summary>
    /// What can be checked cheaply that the bitmap did not hand out a page in use: not a page this transaction
    /// changed and still uses, not the root of a tree it has open. Overwriting one would lose data silently, so the
    /// environment is poisoned instead (reopening does not help until the bitmap is repaired).
    /// </summary>
    private void CheckNotInUse(long pageNumber)
    {
        string? what = null;
        ref var dirty = ref CollectionsMarshal.GetValueRefOrNullRef(_dirty!, pageNumber);
        if (!Unsafe.IsNullRef(ref dirty) && !dirty.IsFreed) what = "a page this transaction changed";
        else if (Owner?.IsOpenTreeRoot(pageNumber) == true) what = "the root page of an open tree";
        if (what is null) return;
        var bitmap = FreeSpaceLayout.BitmapPageFor(pageNumber);
        var error = new StorageCorruptedException(
            $"The free-space bitmap handed out page {pageNumber}, which is {what}: the bitmap is damaged. The environment stops accepting writes.",
            _dataFile.Path, bitmap, bitmap * PageLayout.PageSizeBytes + FreeSpaceLayout.BitmapOffsetBytes + FreeSpaceLayout.BitIndex(pageNumber) / 8);
        _writer!.Health.Poison(error);
        throw error;
    }

    public byte* CreatePage(long pageNumber) => CreatePages(pageNumber, 1);

    private byte* CreatePages(long pageNumber, int count)
    {
        var dirtyPages = _dirty!;
        // Pages freed earlier in this transaction may be handed out again; their copies are no longer needed.
        for (var p = pageNumber; p < pageNumber + count; p++)
        {
            if (dirtyPages.Remove(p, out var stale)) _writer!.Scratch.Return(stale.Buffer, onWriter: true);
        }
        var buffer = _writer!.Scratch.Rent(count);
        new Span<byte>(buffer.Pointer, PageLayout.PageSizeBytes).Clear();
        if (count > 1) ClearRest(buffer);
        ((PageHeader*)buffer.Pointer)->PageNumber = pageNumber;
        dirtyPages[pageNumber] = new DirtyPage { Buffer = buffer, IsNew = true };
        return buffer.Pointer;
    }

    private static void ClearRest(ScratchBuffer buffer)
    {
        var p = buffer.Pointer + PageLayout.PageSizeBytes;
        var remaining = buffer.SizeBytes - PageLayout.PageSizeBytes;
        while (remaining > 0)
        {
            var chunk = (int)Math.Min(remaining, 1 << 30);
            new Span<byte>(p, chunk).Clear();
            p += chunk;
            remaining -= chunk;
        }
    }

    public void FreePages(long firstPageNumber, int count)
    {
        _writer!.FreeSpace.Free(this, firstPageNumber, count);
        ref var dirty = ref CollectionsMarshal.GetValueRefOrNullRef(_dirty!, firstPageNumber);
        if (!Unsafe.IsNullRef(ref dirty)) dirty.IsFreed = true;
    }

    /// <summary>Gives back the dirty copies of a transaction that did not commit.</summary>
    public void DiscardDirty()
    {
        if (_dirty is null) return;
        foreach (var (_, page) in _dirty) _writer!.Scratch.Return(page.Buffer, onWriter: true);
        _dirty.Clear();
    }

    /// <summary>
    /// Unpins the snapshot, so flushes and pruning may pass it. A write transaction does this as soon as it
    /// has committed: it can read nothing after that.
    /// </summary>
    public void ReleaseSnapshot()
    {
        if (_slot is null) return;
        _readers.Release(_slot);
        _slot = null;
    }

    /// <summary>Unpins the snapshot and the maps.</summary>
    public void Release()
    {
        ReleaseSnapshot();
        _mapping?.Release();
        _mapping = null;
        if (_olderMappings is not null)
        {
            foreach (var m in _olderMappings) m.Release();
            _olderMappings = null;
        }
    }

    private static void ThrowOutside(long pageNumber) =>
        throw new StorageCorruptedException($"A tree points at page {pageNumber}, which is outside the environment.", pageNumber: pageNumber);

    private static void ThrowFreedPage(long pageNumber) =>
        throw new StorageCorruptedException($"Page {pageNumber} is used after it was freed.", pageNumber: pageNumber);
}
