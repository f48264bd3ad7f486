using Storage.Commit;
using Storage.Diagnostics;
using Storage.Flush;
using Storage.Journal;
using Storage.Paging;
using Storage.State;
using Storage.Transactions;

namespace Storage;

public sealed partial class StorageEnvironment
{
    /// <summary>
    /// The critical lane, first half, on the committing thread with the write lock held: one journal entry of page
    /// diffs, appended to those waiting for the next durable write; the new versions go into the page table under the
    /// transaction's id, where the next write transaction (and only it) sees them. The write lock is released after
    /// this; <see cref="CompleteCommit"/> waits for the write.
    /// </summary>
    internal unsafe PendingCommit AppendCommit(WriteTransaction transaction, CommitDurability durability)
    {
        var commitStarted = CommitProfile.Now();
        EnsureWritable();
        var pages = transaction.Pages;
        var dirty = pages.Dirty;
        if (dirty.Count == 0) return default;
        ReaderMonitor.ThrowIfCommitsRefused();
        // A free run at the end of the file goes back: the end moves down, and the file is cut once that is synced.
        if (FreeSpace.FreedInTransaction) FreeSpace.TrimTail(pages);
        // The space the transaction's new pages take is reserved now: on a full disk this commit fails, with nothing
        // written, and the environment stays usable (the flusher never meets a full disk writing these pages later).
        DataFile.EnsurePageCountForCommit(pages.NextPageNumber);
        DataFile.GrowAheadIfLow(pages.NextPageNumber);
        var profile = Profile;
        long checksumTicks = 0;

        var transactionId = transaction.TransactionId;
        var root = transaction.RootState.ToHeader();
        int leaves = 0, branches = 0, overflows = 0, others = 0;
        _entryBuilder.Begin();
        if (transactionId > PageHeader.MaxTransactionId)
        {
            throw new StorageException(StorageErrorCode.TransactionTooLarge, $"Transaction ids are exhausted ({PageHeader.MaxTransactionId:N0}).");
        }
        var pagesStarted = CommitProfile.Now();
        // The bytes the diffs compare are mostly out of the cache by now: ask for all of them first.
        _diffHelper.Begin(transactionId);
        foreach (var (pageNumber, page) in dirty)
        {
            if (page.Lines != null && !page.IsFreed) Storage.Commit.WrittenLines.Prefetch(page.Lines, page.Buffer.Pointer, page.Original);
            if (DiffHelper.IsChanged(page)) _diffHelper.Add(pageNumber, page);
        }
        try
        {
            // A large transaction's changed pages are diffed on two threads: the helper starts on them while this one adds
            // the new pages and the runs.
            _diffHelper.StartHelper();
            foreach (var (pageNumber, page) in dirty)
            {
                if (page.IsFreed || DiffHelper.IsChanged(page)) continue;
                // A page given back to the file system earlier gets its blocks again first (see SpaceReturner).
                if (page.IsNew && DataFile.MayHaveHoles && DataFile.IsHole(pageNumber, page.Buffer.PageCount)) DataFile.RefillHoles(pageNumber, page.Buffer.PageCount);
                var header = (PageHeader*)page.Buffer.Pointer;
                if (page.Buffer.PageCount > 1 || (header->Flags & PageFlags.Overflow) != 0)
                {
                    overflows += AddRunRecord(pageNumber, page, transactionId, ref checksumTicks);
                    continue;
                }
                // The journal record carries the stamped page, so recovery can verify the page it rebuilds against it.
                var stampStarted = CommitProfile.Now();
                DataFile.Stamp(page.Buffer, transactionId);
                checksumTicks += CommitProfile.Now() - stampStarted;
                _entryBuilder.AddPage(pageNumber, page.Buffer.Pointer, PageDiff.ZeroPage, isNew: true);
                DiffHelper.CountKind(header->Flags, ref leaves, ref branches, ref others);
            }
            _diffHelper.Diff(_entryBuilder);
        }
        finally
        {
            // The helper reads and stamps this transaction's pages: it is done before anything can give them back.
            _diffHelper.Wait();
        }
        leaves += _diffHelper.Leaves;
        branches += _diffHelper.Branches;
        others += _diffHelper.Others;
        foreach (var (pageNumber, page) in _diffHelper.Overflows) overflows += AddRunRecord(pageNumber, page, transactionId, ref checksumTicks);
        // Changed pages' checksums are worked out with their diffs, and count as diffing.
        var diffTicks = CommitProfile.Now() - pagesStarted - checksumTicks;
        var uncompressed = _entryBuilder.PayloadSizeBytes;
        if (uncompressed > Options.MaxTransactionPayloadBytes)
        {
            // Recovery replays an entry in one piece; an entry it could not replay must never be acknowledged.
            throw new StorageException(StorageErrorCode.TransactionTooLarge,
                $"The transaction changes {uncompressed:N0} bytes of pages; one transaction may change at most {Options.MaxTransactionPayloadBytes:N0}. Nothing was written.");
        }
        var finishStarted = CommitProfile.Now();
        var (entry, length) = _entryBuilder.Finish(EnvironmentId, transactionId, pages.NextPageNumber, root, Journal.EntryStamp);
        var compressed = (((JournalEntryHeader*)entry)->Flags & JournalEntryHeader.CompressedFlag) != 0;

        // Making room may create a journal file; if that fails (a full disk), nothing of this entry was
        // written and the environment stays usable: only this transaction fails. Writing the entries waiting for the
        // current file first may fail too: that poisons the environment (see IJournalListener.WriteFailed).
        var reserveStarted = CommitProfile.Now();
        Journal.Reserve(length, transactionId);
        var lazy = durability == CommitDurability.Lazy;
        var appendStarted = CommitProfile.Now();
        var firstWaiting = !Journal.HasPendingEntries;
        var position = Journal.Append((byte*)entry, length, transactionId);
        DataFile.NoteAppended(pages.NextPageNumber);
        // The flusher writes lazy entries when the first has waited long enough.
        if (lazy && firstWaiting) _flusher.Wake();
        if (length > 16 << 20) _entryBuilder.Trim();

        // Appended: nothing below does I/O or can fail.
        PageTable.AddCommitted(dirty, transactionId);
        foreach (var (_, page) in dirty)
        {
            if (page.IsFreed) Scratch.Return(page.Buffer, onWriter: true);
        }
        FreeSpace.Commit(pages.NextPageNumber);
        var state = new EnvironmentState(transactionId, root, pages.NextPageNumber);
        _writerState = state;
        lock (_commitRecords)
        {
            _commitRecords.Enqueue((new CommitRecord(transactionId, position.FileNumber, position.OffsetBytes + length, pages.NextPageNumber, root), state));
            // A lazy commit is visible at once, and with it any commit appended before it.
            if (lazy) Interlocked.Exchange(ref _state, state);
        }
        pages.ReleaseSnapshot();
        var pruneLockWait = PruneSupersededVersions(dirty, transactionId);
        dirty.Clear();

        Interlocked.Increment(ref _commits);
        _flusher.NoteCommit(length);
        var appended = CommitProfile.Now();
        Interlocked.Increment(ref profile.Transactions);
        CommitProfile.Add(ref profile.BodyTicks, transaction.BeganTimestamp, commitStarted);
        // The copies are estimated from a sample, so a few slow samples could make them exceed the body they are part of.
        Interlocked.Add(ref profile.PageCopyTicks, Math.Min(pages.PageCopyTicks, commitStarted - transaction.BeganTimestamp));
        pages.PageCopyTicks = 0;
        Interlocked.Add(ref profile.ChecksumTicks, checksumTicks);
        Interlocked.Add(ref profile.DiffTicks, diffTicks);
        CommitProfile.Add(ref profile.FinishTicks, finishStarted, reserveStarted);
        CommitProfile.Add(ref profile.SwitchTicks, reserveStarted, appendStarted);
        Interlocked.Add(ref profile.PruneLockWaitTicks, pruneLockWait);
        CommitProfile.Add(ref profile.PublishTicks, appendStarted, appended);
        var stats = new CommitStats
        {
            TransactionId = transactionId,
            LeafPages = leaves,
            BranchPages = branches,
            OverflowPages = overflows,
            OtherPages = others,
            JournalBytes = length,
            UncompressedPayloadBytes = uncompressed,
            Compressed = compressed,
            IsDurable = !lazy,
        };
        Interlocked.Add(ref _pagesModified, stats.PagesModified);
        return new PendingCommit(stats, commitStarted, appended);
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

    /// <summary>
    /// The critical lane, second half, after the write lock is released: a durable commit waits until the write holding
    /// its entry returns (writing it, and every entry appended meanwhile, itself if no other committer is), then makes
    /// the durable state visible to readers.
    /// </summary>
    internal CommitStats CompleteCommit(in PendingCommit pending)
    {
        if (pending.Stats.TransactionId != 0 && pending.Stats.IsDurable) Journal.Waiters.Wait(pending.Stats.TransactionId);
        return Completed(pending);
    }

    /// <summary>As <see cref="CompleteCommit"/>, completing when the write returns, with no thread blocked meanwhile.</summary>
    internal ValueTask<CommitStats> CompleteCommitAsync(PendingCommit pending)
    {
        if (pending.Stats.TransactionId == 0 || !pending.Stats.IsDurable) return ValueTask.FromResult(Completed(pending));
        var wait = Journal.Waiters.WaitAsync(pending.Stats.TransactionId);
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
        var profile = Profile;
        if (stats.IsDurable)
        {
            if (Journal.DurableTransactionId < stats.TransactionId) Journal.ThrowIfFailedOrClosed(stats.TransactionId);
            // The writer publishes before waking its committers; a commit that saw its write return earlier (between
            // the journal marking it durable and publishing) publishes here.
            if (CurrentState.TransactionId < stats.TransactionId) PublishDurableCommits();
            var durable = CommitProfile.Now();
            CommitProfile.Add(ref profile.WriteTicks, pending.AppendedTimestamp, durable);
            profile.CommitLatency.Record(durable - pending.StartedTimestamp);
            _metrics.RecordCommit(durable - pending.StartedTimestamp);
        }
        else
        {
            // A write that took this entry between its append and its record's queueing published without it: with no
            // later write, the flusher would never get this commit.
            if (Journal.DurableTransactionId >= stats.TransactionId && HandedToFlusher < stats.TransactionId) PublishDurableCommits();
            profile.CommitLatency.Record(pending.AppendedTimestamp - pending.StartedTimestamp);
            _metrics.RecordCommit(pending.AppendedTimestamp - pending.StartedTimestamp);
        }
        return stats;
    }

    /// <summary>A commit appended to the journal and waiting for its durable write.</summary>
    internal readonly record struct PendingCommit(CommitStats Stats, long StartedTimestamp, long AppendedTimestamp);

    /// <summary>A durable write of journal entries returned: the profile, metrics and compression policy learn its time.</summary>
    private void OnDurableWrite(long bytes, long ticks)
    {
        _entryBuilder.Compression.RecordWrite(bytes, ticks);
        Profile.JournalWriteLatency.Record(ticks);
        _metrics.RecordJournalWrite(ticks);
    }

    /// <summary>
    /// While lazy commits wait, the flusher may write only up to the last durable transaction, so the versions that
    /// state reads must stay as if a snapshot pinned it. Read after this commit's entry was appended: a write of lazy
    /// entries after that covers this commit too, whose versions are the newest anyway.
    /// </summary>
    internal void KeepDurablePoint(List<long> sortedSnapshots, long published)
    {
        // The last commit handed to the flusher first: a flush may aim there until it has a later one (see PrunePoint).
        Keep(sortedSnapshots, HandedToFlusher, published);
        Keep(sortedSnapshots, Journal.DurableTransactionId, published);

        static void Keep(List<long> sortedSnapshots, long point, long published)
        {
            if (point >= published) return;
            var at = sortedSnapshots.BinarySearch(point);
            if (at < 0) sortedSnapshots.Insert(~at, point);
        }
    }

    /// <summary>Commits appended whose journal entries may not be durable yet, in order, with the state each publishes.</summary>
    private readonly Queue<(CommitRecord Record, EnvironmentState State)> _commitRecords = new();

    /// <summary>The last commit of the last batch of records handed to the flusher: no flush aims at a later one.</summary>
    private long _handedToFlusher;

    /// <inheritdoc cref="_handedToFlusher"/>
    internal long HandedToFlusher => Volatile.Read(ref _handedToFlusher);

    /// <summary>
    /// What pruning may treat as published: the published state, or the newest commit handed to the flusher when that is
    /// older. A flush aims at the newest record it has (or at a snapshot, which is kept anyway), and each record is handed
    /// only once its entry is durable, some time after a lazy commit was published (and, for every commit, a moment after
    /// the journal counts it durable). Every version newer than this point is kept, so whichever commit a flush aims at
    /// later, the version it must write is there. Pruning by the published state alone, a lazy commit could drop the version
    /// of a commit whose write was still under way, or durable but not yet handed over; a flush aiming there would write
    /// the page as it was before that commit and count it flushed.
    /// </summary>
    /// <remarks>
    /// While no write is under way (<see cref="IEnvironmentJournal.WritesUnderWay"/>), every durable commit has been
    /// handed over and a later write holds every entry appended before this prune: the published state is the point, with
    /// the last commit handed over and the durable point kept as snapshots (<see cref="KeepDurablePoint"/>), since a flush
    /// can aim only at those or at a commit newer than this one. The count is read first: a write it missed began after
    /// it, so after this commit's entry was appended, and holds it.
    /// </remarks>
    internal long PrunePoint(long published) =>
        Journal.WritesUnderWay == 0 ? published : Math.Min(published, HandedToFlusher);

    /// <summary>
    /// Makes the commits whose journal entries are durable visible to readers (lazy ones are already) and hands them to
    /// the flusher, in order: it may write a transaction's pages to the data file only then, or a crash could leave the
    /// data file ahead of the journal.
    /// </summary>
    internal void PublishDurableCommits()
    {
        var durable = Journal.DurableTransactionId;
        lock (_commitRecords)
        {
            EnvironmentState? last = null;
            while (_commitRecords.TryPeek(out var next) && next.Record.TransactionId <= durable)
            {
                _commitRecords.Dequeue();
                _flusher.RecordCommit(next.Record);
                last = next.State;
            }
            // Once for the whole batch, after the flusher has every record of it: a flush aims no further than this, so
            // never inside a batch (see PrunePoint).
            if (last is not null) Volatile.Write(ref _handedToFlusher, last.TransactionId);
            // A full fence: a reader that registers on the old state is then visible to a pruner that reads the new one.
            if (last is not null && last.TransactionId > _state.TransactionId) Interlocked.Exchange(ref _state, last);
        }
    }

    /// <summary>
    /// Writes the journal entries waiting (lazy commits', and durable ones' not yet written), durably; the journal
    /// publishes them (<see cref="IJournalListener.BecameDurable"/>), and a failure poisons the environment
    /// (<see cref="IJournalListener.WriteFailed"/>).
    /// </summary>
    internal void WritePendingCommits() => Journal.WritePending();

    /// <summary>
    /// The versions this commit superseded are garbage unless a snapshot still reads them; giving them back
    /// now keeps scratch memory proportional to distinct dirty pages and the versions open snapshots see,
    /// rather than to every version since the oldest snapshot. A dropped version is one no snapshot can
    /// reach (see <see cref="PageTable.Prune"/>), so its buffer is reused at once; buffers the flusher
    /// removed wait for their epoch in the reclaimer.
    /// </summary>
    /// <returns>The ticks spent waiting for <see cref="PruneLock"/>.</returns>
    private long PruneSupersededVersions(Dictionary<long, Transactions.DirtyPage> dirty, long transactionId)
    {
        var waitStarted = CommitProfile.Now();
        long waited;
        long published;
        long prunePoint;
        long settled;
        lock (PruneLock)
        {
            waited = CommitProfile.Now() - waitStarted;
            // The published state is read before the slots: a reader missing from them registers on that state or a
            // newer one. Every version newer than it is kept (commits waiting for their durable write among them), and
            // every version newer than the last commit handed to the flusher (see PrunePoint).
            published = CurrentState.TransactionId;
            prunePoint = PrunePoint(published);
            // Commits after this one the flusher does not have yet: what they superseded may be kept for it.
            settled = Math.Min(published, HandedToFlusher);
            Readers.CollectSnapshots(_snapshots);
            KeepDurablePoint(_snapshots, published);
            var snapshots = System.Runtime.InteropServices.CollectionsMarshal.AsSpan(_snapshots);
            // Then pages of earlier commits pruned while they waited for their write: what they superseded may go now.
            PageTable.PruneCommitted(dirty, _pruneAgain, snapshots, prunePoint, _pruned);
            // And pages of lazy commits the flusher now has: the versions kept before them may go.
            PageTable.PruneQueued(_pruneAfterDurable, settled, MaxPrunesAfterDurablePerCommit, snapshots, prunePoint, _pruned);
        }
        while (_pruneAgain.TryPeek(out var earlier) && earlier.TransactionId <= published)
        {
            _pruneAgain.Dequeue();
            // Made visible by a lazy commit after it before the flusher has it: pruned again once the flusher does.
            if (earlier.TransactionId > settled && _pruneAfterDurable.Count < MaxPrunesAfterDurableQueued) _pruneAfterDurable.Enqueue(earlier);
        }
        if (transactionId > published)
        {
            foreach (var (pageNumber, page) in dirty)
            {
                if (!page.IsFreed) _pruneAgain.Enqueue((transactionId, pageNumber));
            }
        }
        else if (transactionId > settled)
        {
            // A lazy commit, visible before the flusher has it: the versions its pages had before stay until the flusher
            // has this commit (see PrunePoint). Pruned again then, once, rather than when the page next changes: otherwise
            // every page a bulk load touches holds two versions.
            // A long lazy delay would grow the queue without end (a page once per commit): past its cap, the versions wait
            // for the page's next change or the flusher, as they would without it.
            foreach (var (pageNumber, page) in dirty)
            {
                if (!page.IsFreed && _pruneAfterDurable.Count < MaxPrunesAfterDurableQueued) _pruneAfterDurable.Enqueue((transactionId, pageNumber));
            }
        }
        foreach (var buffer in _pruned) Scratch.Return(buffer, onWriter: true);
        _pruned.Clear();
        if (Reclaimer.HasWaiting) Reclaimer.Reclaim(Readers.ReclaimableEpoch(), onWriter: true);
        return waited;
    }

    /// <summary>Pages of commits that were not yet visible when they pruned, oldest commit first (the writer's own).</summary>
    private readonly Queue<(long TransactionId, long PageNumber)> _pruneAgain = new();

    /// <summary>Pages of lazy commits that were not yet durable when they pruned, oldest commit first (the writer's own).</summary>
    private readonly Queue<(long TransactionId, long PageNumber)> _pruneAfterDurable = new();

    /// <summary>
    /// How many pages of <see cref="_pruneAfterDurable"/> one commit prunes at most: a lazy write makes thousands durable
    /// at once, and pruning them all in the next commit would hold it up for milliseconds.
    /// </summary>
    private const int MaxPrunesAfterDurablePerCommit = 1024;

    /// <summary>The most pages <see cref="_pruneAfterDurable"/> holds (2 MiB of queue).</summary>
    private const int MaxPrunesAfterDurableQueued = 1 << 17;

    /// <summary>
    /// Flushes and syncs everything committed. Open read transactions keep their snapshot readable until
    /// they are disposed; the directory is released when the last of them is. A write transaction still open after
    /// <see cref="DisposeWriterWaitMs"/> is left to the journal: everything committed is durable there.
    /// </summary>
    public void Dispose()
    {
        if (_disposed) return;
        // A group's root closes its branches first: they write into its journal folder.
        Interlocked.Exchange(ref _beforeClose, null)?.Invoke();
        _disposed = true;
        StopMerging();
        var haveWriteLock = _writeLock.Wait(DisposeWriterWaitMs);
        _flusher.Stop();
        if (haveWriteLock && _poison is null)
        {
            try
            {
                WritePendingCommits();
                // The last sync cuts the room grown ahead of the last page: nothing may lengthen the file after it.
                DataFile.StopGrowingAhead();
                _flusher.FlushAndSync(forceSync: true, writerHeld: true);
            }
            catch (Exception e) when (e is StorageException or IOException)
            {
                // Everything committed is in the journal; the next open replays it.
                Poison(e);
            }
            if (_poison is null) MoveJournalToSmallFile();
            if (_poison is null)
            {
                try
                {
                    Journal.TrimSpares(DataFile.PageCount * PageLayout.PageSizeBytes / ClosedJournalShare);
                }
                catch (Exception e) when (e is StorageException or IOException)
                {
                    // A spare left behind is adopted or deleted by the next open.
                }
            }
        }
        Journal.Dispose();
        Interlocked.Exchange(ref _closed, null)?.Invoke();
        _flusher.Dispose();
        _metrics.Dispose();
        ReleaseLifetimeReference();
    }

    private const int DisposeWriterWaitMs = 10_000;

    private Action? _beforeClose;

    /// <summary>Run once at the start of <see cref="Dispose"/> (a group's root closes the group's branches there).</summary>
    internal Action? BeforeClose
    {
        set => _beforeClose = value;
    }

    private Action? _closed;

    /// <summary>Run once after the journal is closed, by <see cref="Dispose"/> or a simulated crash (a group's root ends the shared journal there).</summary>
    internal Action? ClosedHook
    {
        set => _closed = value;
    }

    internal bool IsDisposed => _disposed;

    /// <summary>
    /// At a clean close with everything synced, when the journal's files take more than their share of the data file:
    /// the journal goes on in a new file of the smallest size, and the data file's header names it, so the large
    /// current file is retired (see <see cref="JournalWriter.StartSmallFile"/>). On failure nothing is lost: the header
    /// still names the file it named, which holds what it held (at most a marker naming the new file was added).
    /// </summary>
    private void MoveJournalToSmallFile()
    {
        var last = CurrentState.TransactionId;
        if (Journal.TotalBytes <= DataFile.PageCount * PageLayout.PageSizeBytes / ClosedJournalShare || !_flusher.IsSyncedThrough(last)) return;
        try
        {
            var (number, offset) = Journal.StartSmallFile(last + 1);
            _flusher.MoveJournalStart(last, number, offset);
        }
        catch (Exception e) when (e is StorageException or IOException)
        {
            // The header names the file it named, whose entries are all in the data file: the next open continues there.
        }
    }

    /// <summary>A closed environment keeps spare journal files only while the journal stays within this share (1/n) of the data file.</summary>
    private const int ClosedJournalShare = 4;

    /// <summary>Test seam: stops as a killed process would, without flushing, syncing or closing cleanly.</summary>
    internal void SimulateCrash()
    {
        if (_disposed) return;
        _disposed = true;
        StopMerging();
        _flusher.Stop();
        Journal.Dispose();
        Interlocked.Exchange(ref _closed, null)?.Invoke();
        _flusher.Dispose();
        _metrics.Dispose();
        // A killed process holds no lock: the directory is free at once (the test must not use old transactions).
        _lockHandle.Dispose();
        ReleaseLifetimeReference();
    }

    private sealed class JournalEvents(StorageEnvironment environment) : IJournalListener
    {
        public void DurableWriteTimed(long bytes, long ticks) => environment.OnDurableWrite(bytes, ticks);

        public void BecameDurable() => environment.PublishDurableCommits();

        public void WriteFailed(Exception failure) => environment.Poison(failure);
    }
}
