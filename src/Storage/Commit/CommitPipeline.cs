using Storage.Allocation;
using Storage.Diagnostics;
using Storage.Flush;
using Storage.Journal;
using Storage.Paging;
using Storage.Scratch;
using Storage.State;
using Storage.Transactions;
using Storage.Trees;

namespace Storage.Commit;

/// <summary>
/// The critical lane. <see cref="Append"/>, on the committing thread with the write lock held, is a straight line of named
/// steps: reserve the space the new pages take, add a record per dirty page (diffs of changed pages, whole new pages and
/// runs), finish the entry, make room in the journal, append it, publish its versions to the page table, and prune what
/// it superseded. The write lock is released after it; <see cref="Complete"/> waits for the durable write, which the
/// journal reports back through <see cref="IJournalListener"/>. The profile is taken around the steps, once per commit.
/// </summary>
internal sealed class CommitPipeline : IJournalListener, IDisposable
{
    private readonly ulong _environmentId;
    private readonly long _maxPayloadBytes;
    private readonly EnvironmentHealth _health;
    private readonly DataFile _dataFile;
    private readonly FreeSpaceMap _freeSpace;
    private readonly PageTable _pageTable;
    private readonly ScratchPool _scratch;
    private readonly EnvironmentStates _states;
    private readonly IEnvironmentJournal _journal;
    private readonly VersionRetention _versions;
    private readonly Flusher _flusher;
    private readonly ReaderMonitor _readerMonitor;
    private readonly StorageMetrics _metrics;
    private readonly CommitPublisher _publisher;
    private readonly JournalEntryBuilder _entryBuilder;
    private long _commits;
    private long _pagesModified;

    public CommitPipeline(ulong environmentId, StorageOptions options, EnvironmentHealth health, DataFile dataFile, FreeSpaceMap freeSpace,
        PageTable pageTable, ScratchPool scratch, EnvironmentStates states, IEnvironmentJournal journal, VersionRetention versions,
        Flusher flusher, ReaderMonitor readerMonitor, StorageMetrics metrics)
    {
        _environmentId = environmentId;
        _maxPayloadBytes = options.Hooks.MaxTransactionPayloadBytes;
        _health = health;
        _dataFile = dataFile;
        _freeSpace = freeSpace;
        _pageTable = pageTable;
        _scratch = scratch;
        _states = states;
        _journal = journal;
        _versions = versions;
        _flusher = flusher;
        _readerMonitor = readerMonitor;
        _metrics = metrics;
        _publisher = new CommitPublisher(states, journal, versions, flusher);
        _entryBuilder = new JournalEntryBuilder(options.CompressionThresholdBytes);
        DiffHelper = new DiffHelper(options.CompressionThresholdBytes);
        journal.Attach(this);
    }

    /// <summary>Where write transactions spend their time (<see cref="CommitActivity.Phases"/>).</summary>
    public CommitProfile Profile { get; } = new();

    /// <summary>The thread-pool helper that diffs half of a large transaction's pages (tests switch it off).</summary>
    public DiffHelper DiffHelper { get; }

    /// <summary>Whether journal entries are compressed (tests force it).</summary>
    public CompressionPolicy Compression => _entryBuilder.Compression;

    /// <summary>Which page versions must be kept (shared with the flusher).</summary>
    public VersionRetention Versions => _versions;

    /// <summary>Commits appended since open.</summary>
    public long Commits => Interlocked.Read(ref _commits);

    /// <summary>Pages the commits changed, allocated or freed since open.</summary>
    public long PagesModified => Interlocked.Read(ref _pagesModified);

    /// <summary>
    /// The first half of a commit, with the write lock held: one journal entry of page records, appended to those waiting for
    /// the next durable write; the new versions go into the page table under the transaction's id, where the next write
    /// transaction (and only it) sees them. Throws, with nothing appended, when the space or the journal cannot take it.
    /// The caller checked that the environment is open and not poisoned.
    /// </summary>
    public PendingCommit Append(WriteTransaction transaction, CommitDurability durability)
    {
        var timings = new AppendTimings { Began = transaction.BeganTimestamp, Started = CommitProfile.Now() };
        var pages = transaction.Pages;
        var dirty = pages.Dirty;
        if (dirty.Count == 0) return default;
        _readerMonitor.ThrowIfCommitsRefused();
        ReserveSpace(pages);
        var transactionId = transaction.TransactionId;
        var root = transaction.RootState.ToHeader();
        timings.PagesStarted = CommitProfile.Now();
        var kinds = AddPageRecords(dirty, transactionId, ref timings.ChecksumTicks);
        timings.Diffed = CommitProfile.Now();
        var entry = FinishEntry(transactionId, pages.NextPageNumber, root);
        timings.Finished = CommitProfile.Now();
        // Making room may create a journal file; if that fails (a full disk), nothing of this entry was written and the
        // environment stays usable: only this transaction fails. Writing the entries waiting for the current file first may
        // fail too: that poisons the environment (see IJournalListener.WriteFailed).
        _journal.Reserve(entry.LengthBytes, transactionId);
        timings.Reserved = CommitProfile.Now();
        var lazy = durability == CommitDurability.Lazy;
        var endBytes = AppendToJournal(entry, transactionId, pages.NextPageNumber, lazy);
        // Appended: nothing below does I/O or can fail.
        Publish(dirty, new CommitRecord(transactionId, endBytes.FileNumber, endBytes.OffsetBytes, pages.NextPageNumber, root), lazy);
        pages.ReleaseSnapshot();
        timings.PruneLockWaitTicks = _versions.PruneSuperseded(dirty, transactionId);
        dirty.Clear();
        Interlocked.Increment(ref _commits);
        _flusher.NoteCommit(entry.LengthBytes);
        timings.Appended = CommitProfile.Now();
        timings.PageCopyTicks = pages.PageCopyTicks;
        pages.PageCopyTicks = 0;
        Profile.RecordAppend(timings);
        var stats = new CommitStats
        {
            TransactionId = transactionId,
            LeafPages = kinds.Leaves,
            BranchPages = kinds.Branches,
            OverflowPages = kinds.Overflows,
            OtherPages = kinds.Others,
            JournalBytes = entry.LengthBytes,
            UncompressedPayloadBytes = entry.UncompressedBytes,
            Compressed = entry.Compressed,
            IsDurable = !lazy,
        };
        Interlocked.Add(ref _pagesModified, stats.PagesModified);
        return new PendingCommit(stats, timings.Started, timings.Appended);
    }

    /// <summary>
    /// A free run at the end of the file goes back (the end moves down, and the file is cut once that is synced); the space
    /// the transaction's new pages take is reserved: on a full disk this commit fails, with nothing written, and the
    /// environment stays usable (the flusher never meets a full disk writing these pages later).
    /// </summary>
    private void ReserveSpace(PageTransaction pages)
    {
        if (_freeSpace.FreedInTransaction) _freeSpace.TrimTail(pages);
        _dataFile.EnsurePageCountForCommit(pages.NextPageNumber);
        _dataFile.GrowAheadIfLow(pages.NextPageNumber);
    }

    /// <summary>How many pages of each kind a commit wrote.</summary>
    private struct PageKinds
    {
        public int Leaves;
        public int Branches;
        public int Overflows;
        public int Others;
    }

    /// <summary>
    /// A record per dirty page: a diff for a changed page (a large transaction's are made on two threads), the page whole for
    /// a new one, the run whole for an overflow value; each stamped with its checksum first, so that recovery can verify the
    /// page it rebuilds. Adds the time spent stamping new pages and runs to <paramref name="checksumTicks"/>.
    /// </summary>
    private unsafe PageKinds AddPageRecords(Dictionary<long, DirtyPage> dirty, long transactionId, ref long checksumTicks)
    {
        if (transactionId > PageHeader.MaxTransactionId)
        {
            throw new StorageException(StorageErrorCode.TransactionTooLarge, $"Transaction ids are exhausted ({PageHeader.MaxTransactionId:N0}).");
        }
        _entryBuilder.Begin();
        var kinds = new PageKinds();
        // The bytes the diffs compare are mostly out of the cache by now: ask for all of them first.
        DiffHelper.Begin(transactionId);
        foreach (var (pageNumber, page) in dirty)
        {
            if (page.Lines != null && !page.IsFreed) WrittenLines.Prefetch(page.Lines, page.Buffer.Pointer, page.Original);
            if (DiffHelper.IsChanged(page)) DiffHelper.Add(pageNumber, page);
        }
        try
        {
            // The helper starts on the changed pages while this thread adds the new pages and the runs.
            DiffHelper.StartHelper();
            foreach (var (pageNumber, page) in dirty)
            {
                if (page.IsFreed || DiffHelper.IsChanged(page)) continue;
                // A page given back to the file system earlier gets its blocks again first (see SpaceReturner).
                if (page.IsNew && _dataFile.MayHaveHoles && _dataFile.IsHole(pageNumber, page.Buffer.PageCount)) _dataFile.RefillHoles(pageNumber, page.Buffer.PageCount);
                var header = (PageHeader*)page.Buffer.Pointer;
                if (page.Buffer.PageCount > 1 || (header->Flags & PageFlags.Overflow) != 0)
                {
                    kinds.Overflows += AddRunRecord(pageNumber, page, transactionId, ref checksumTicks);
                    continue;
                }
                var stampStarted = CommitProfile.Now();
                DataFile.Stamp(page.Buffer, transactionId);
                checksumTicks += CommitProfile.Now() - stampStarted;
                _entryBuilder.AddPage(pageNumber, page.Buffer.Pointer, PageDiff.ZeroPage, isNew: true);
                DiffHelper.CountKind(header->Flags, ref kinds.Leaves, ref kinds.Branches, ref kinds.Others);
            }
            DiffHelper.Diff(_entryBuilder);
        }
        finally
        {
            // The helper reads and stamps this transaction's pages: it is done before anything can give them back.
            DiffHelper.Wait();
        }
        kinds.Leaves += DiffHelper.Leaves;
        kinds.Branches += DiffHelper.Branches;
        kinds.Others += DiffHelper.Others;
        foreach (var (pageNumber, page) in DiffHelper.Overflows) kinds.Overflows += AddRunRecord(pageNumber, page, transactionId, ref checksumTicks);
        return kinds;
    }

    /// <summary>Adds a run of pages (an overflow value) whole, stamped: recovery verifies the run it rebuilds against it.</summary>
    private unsafe int AddRunRecord(long pageNumber, in DirtyPage page, long transactionId, ref long checksumTicks)
    {
        var stampStarted = CommitProfile.Now();
        DataFile.Stamp(page.Buffer, transactionId);
        checksumTicks += CommitProfile.Now() - stampStarted;
        var header = (PageHeader*)page.Buffer.Pointer;
        var used = Math.Min(page.Buffer.SizeBytes, PageLayout.HeaderSizeBytes + (long)header->OverflowSizeBytes);
        _entryBuilder.AddRun(pageNumber, page.Buffer.PageCount, page.Buffer.Pointer, used);
        return page.Buffer.PageCount;
    }

    /// <summary>A finished journal entry: where it is, its length, and its payload before compression.</summary>
    private readonly record struct FinishedEntry(IntPtr Pointer, long LengthBytes, long UncompressedBytes, bool Compressed);

    /// <summary>The entry's header, compression and checksum; an entry recovery could not replay in one piece is refused.</summary>
    private unsafe FinishedEntry FinishEntry(long transactionId, long nextPageNumber, in TreeHeader root)
    {
        var uncompressed = _entryBuilder.PayloadSizeBytes;
        if (uncompressed > _maxPayloadBytes)
        {
            throw new StorageException(StorageErrorCode.TransactionTooLarge,
                $"The transaction changes {uncompressed:N0} bytes of pages; one transaction may change at most {_maxPayloadBytes:N0}. Nothing was written.");
        }
        var (entry, length) = _entryBuilder.Finish(_environmentId, transactionId, nextPageNumber, root, _journal.EntryStamp);
        var compressed = (((JournalEntryHeader*)entry)->Flags & JournalEntryHeader.CompressedFlag) != 0;
        return new FinishedEntry(entry, length, uncompressed, compressed);
    }

    /// <summary>Appends the entry (after <see cref="IEnvironmentJournal.Reserve"/>); returns the journal file and the offset its entry ends at.</summary>
    private unsafe (long FileNumber, long OffsetBytes) AppendToJournal(in FinishedEntry entry, long transactionId, long nextPageNumber, bool lazy)
    {
        var firstWaiting = !_journal.HasPendingEntries;
        var position = _journal.Append((byte*)entry.Pointer, entry.LengthBytes, transactionId);
        _dataFile.NoteAppended(nextPageNumber);
        // The flusher writes lazy entries when the first has waited long enough, or when enough of them wait.
        if (lazy && (firstWaiting || CrossedLazyWriteBytes(entry.LengthBytes))) _flusher.Wake();
        if (entry.LengthBytes > 16 << 20) _entryBuilder.Trim();
        return (position.FileNumber, position.OffsetBytes + entry.LengthBytes);
    }

    /// <summary>Whether this entry brought the entries waiting to <see cref="Flusher.LazyWriteBytes"/>.</summary>
    private bool CrossedLazyWriteBytes(long entryBytes)
    {
        var pending = _journal.PendingBytes;
        return pending >= Flusher.LazyWriteBytes && pending - entryBytes < Flusher.LazyWriteBytes;
    }

    /// <summary>
    /// The new versions go into the page table, freed pages' copies back to scratch, and the state the commit makes becomes
    /// the next write transaction's; readers see it once it is durable (a lazy commit at once).
    /// </summary>
    private void Publish(Dictionary<long, DirtyPage> dirty, in CommitRecord record, bool lazy)
    {
        _pageTable.AddCommitted(dirty, record.TransactionId);
        foreach (var (_, page) in dirty)
        {
            if (page.IsFreed) _scratch.Return(page.Buffer, onWriter: true);
        }
        _freeSpace.Commit(record.NextPageNumber);
        var state = new EnvironmentState(record.TransactionId, record.RootTree, record.NextPageNumber);
        _states.Appended(state);
        _publisher.Appended(record, state, lazy);
    }

    /// <summary>
    /// The second half, after the write lock is released: a durable commit waits until the write holding its entry returns
    /// (writing it, and every entry appended meanwhile, itself if no other committer is), then makes the durable state
    /// visible to readers.
    /// </summary>
    public CommitStats Complete(in PendingCommit pending)
    {
        if (pending.Stats.TransactionId != 0 && pending.Stats.IsDurable) _journal.Waiters.Wait(pending.Stats.TransactionId);
        return Completed(pending);
    }

    /// <summary>As <see cref="Complete"/>, completing when the write returns, with no thread blocked meanwhile.</summary>
    public ValueTask<CommitStats> CompleteAsync(PendingCommit pending)
    {
        if (pending.Stats.TransactionId == 0 || !pending.Stats.IsDurable) return ValueTask.FromResult(Completed(pending));
        var wait = _journal.Waiters.WaitAsync(pending.Stats.TransactionId);
        return wait.IsCompletedSuccessfully ? ValueTask.FromResult(Completed(pending)) : AwaitDurable(wait, pending);

        async ValueTask<CommitStats> AwaitDurable(ValueTask wait, PendingCommit pending)
        {
            await wait.ConfigureAwait(false);
            return Completed(pending);
        }
    }

    /// <summary>The commit's entry is durable, or the write failed (then this throws): publish and account.</summary>
    private CommitStats Completed(in PendingCommit pending)
    {
        var stats = pending.Stats;
        if (stats.TransactionId == 0) return stats;
        if (stats.IsDurable)
        {
            if (_journal.DurableTransactionId < stats.TransactionId) _journal.ThrowIfFailedOrClosed(stats.TransactionId);
            // The writer publishes before waking its committers; a commit that saw its write return earlier (between
            // the journal marking it durable and publishing) publishes here.
            if (_states.Readable.TransactionId < stats.TransactionId) _publisher.PublishDurable();
            var durable = CommitProfile.Now();
            CommitProfile.Add(ref Profile.WriteTicks, pending.AppendedTimestamp, durable);
            RecordLatency(durable - pending.StartedTimestamp);
        }
        else
        {
            // A write that took this entry between its append and its record's queueing published without it: with no
            // later write, the flusher would never get this commit.
            if (_journal.DurableTransactionId >= stats.TransactionId && _versions.HandedToFlusher < stats.TransactionId) _publisher.PublishDurable();
            RecordLatency(pending.AppendedTimestamp - pending.StartedTimestamp);
        }
        return stats;
    }

    private void RecordLatency(long commitTicks)
    {
        Profile.CommitLatency.Record(commitTicks);
        _metrics.RecordCommit(commitTicks);
    }

    /// <summary>A durable write of this environment's entries returned: the profile, metrics and compression policy learn its time.</summary>
    void IJournalListener.DurableWriteTimed(long bytes, long ticks)
    {
        _entryBuilder.Compression.RecordWrite(bytes, ticks);
        Profile.JournalWriteLatency.Record(ticks);
        _metrics.RecordJournalWrite(ticks);
    }

    /// <summary>Published before the waiters wake, so that they find their commits visible and go on at once.</summary>
    void IJournalListener.BecameDurable() => _publisher.PublishDurable();

    /// <summary>Whether any of the write reached the disk is unknown: only the journal can repair that, by reopening.</summary>
    void IJournalListener.WriteFailed(Exception failure) => _health.Poison(failure);

    public void Dispose()
    {
        _entryBuilder.Dispose();
        DiffHelper.Dispose();
    }
}
