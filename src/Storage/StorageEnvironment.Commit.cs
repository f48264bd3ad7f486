using Storage.Diagnostics;
using Storage.Environments;
using Storage.Journal;
using Storage.Paging;

namespace Storage;

public sealed partial class StorageEnvironment
{
    /// <summary>
    /// The critical lane: one journal entry of page diffs, one durable write, then publish. Runs on the
    /// committing thread with the write lock held.
    /// </summary>
    internal unsafe CommitStats Commit(WriteTransaction transaction, CommitDurability durability)
    {
        var commitStarted = CommitProfile.Now();
        EnsureWritable();
        var pages = transaction.Pages;
        var dirty = pages.Dirty;
        if (dirty.Count == 0) return default;
        ReaderMonitor.ThrowIfCommitsRefused();
        var profile = Profile;
        long checksumTicks = 0, diffTicks = 0;

        var transactionId = transaction.TransactionId;
        var root = transaction.RootState.ToHeader();
        int leaves = 0, branches = 0, overflows = 0, others = 0;
        _entryBuilder.Begin();
        if (transactionId > PageHeader.MaxTransactionId)
        {
            throw new StorageException(StorageErrorCode.TransactionTooLarge, $"Transaction ids are exhausted ({PageHeader.MaxTransactionId:N0}).");
        }
        var stampStarted = CommitProfile.Now();
        foreach (var (pageNumber, page) in dirty)
        {
            if (page.IsFreed) continue;
            // The journal record carries the stamped page, so recovery can verify the page it rebuilds against it.
            DataFile.Stamp(page.Buffer, transactionId);
            var stamped = CommitProfile.Now();
            checksumTicks += stamped - stampStarted;
            var header = (PageHeader*)page.Buffer.Pointer;
            if (page.Buffer.PageCount > 1 || (header->Flags & PageFlags.Overflow) != 0)
            {
                var used = Math.Min(page.Buffer.SizeBytes, PageLayout.HeaderSizeBytes + (long)header->OverflowSizeBytes);
                _entryBuilder.AddRun(pageNumber, page.Buffer.PageCount, page.Buffer.Pointer, used);
                stampStarted = CommitProfile.Now();
                diffTicks += stampStarted - stamped;
                overflows += page.Buffer.PageCount;
                continue;
            }
            _entryBuilder.AddPage(pageNumber, page.Buffer.Pointer, page.IsNew ? PageDiff.ZeroPage : page.Original, page.IsNew);
            stampStarted = CommitProfile.Now();
            diffTicks += stampStarted - stamped;
            if ((header->Flags & PageFlags.Leaf) != 0) leaves++;
            else if ((header->Flags & PageFlags.Branch) != 0) branches++;
            else others++;
        }
        var uncompressed = _entryBuilder.PayloadSizeBytes;
        if (uncompressed > Options.MaxTransactionPayloadBytes)
        {
            // Recovery replays an entry in one piece; an entry it could not replay must never be acknowledged.
            throw new StorageException(StorageErrorCode.TransactionTooLarge,
                $"The transaction changes {uncompressed:N0} bytes of pages; one transaction may change at most {Options.MaxTransactionPayloadBytes:N0}. Nothing was written.");
        }
        var finishStarted = CommitProfile.Now();
        var (entry, length) = _entryBuilder.Finish(EnvironmentId, transactionId, pages.NextPageNumber, root);
        var compressed = (((JournalEntryHeader*)entry)->Flags & JournalEntryHeader.CompressedFlag) != 0;

        // Making room may create a journal file; if that fails (a full disk), nothing of this entry was
        // written and the environment stays usable: only this transaction fails.
        var reserveStarted = CommitProfile.Now();
        Journal.Reserve(length, transactionId);
        (long FileNumber, long OffsetBytes) position;
        var lazy = durability == CommitDurability.Lazy;
        var writeStarted = CommitProfile.Now();
        if (lazy)
        {
            var first = !Journal.HasLazyEntries;
            position = Journal.Append((byte*)entry, length, transactionId);
            // The flusher writes the entries when the first has waited long enough.
            if (first) _flusher.Wake();
        }
        else
        {
            try
            {
                position = Journal.Write((byte*)entry, length, transactionId);
            }
            catch (Exception e)
            {
                // Whether any of the entry reached the disk is unknown; the journal position is no longer trustworthy.
                Poison(e);
                throw;
            }
        }
        var written = CommitProfile.Now();
        if (!lazy) _entryBuilder.Compression.RecordWrite(length, written - writeStarted);
        if (length > 16 << 20) _entryBuilder.Trim();

        // Durable: publish. Nothing below does I/O or can fail.
        foreach (var (pageNumber, page) in dirty)
        {
            if (page.IsFreed) Scratch.Return(page.Buffer, onWriter: true);
            else PageTable.Add(pageNumber, transactionId, page.Buffer);
        }
        FreeSpace.Commit(pages.NextPageNumber);
        lock (_commitRecords) _commitRecords.Enqueue(new CommitRecord(transactionId, position.FileNumber, position.OffsetBytes + length, pages.NextPageNumber, root));
        PassDurableCommits();
        // A full fence: a reader that registers on the old state is then visible in the slots read below.
        Interlocked.Exchange(ref _state, new EnvironmentState(transactionId, root, pages.NextPageNumber));
        pages.ReleaseSnapshot();
        var pruneLockWait = PruneSupersededVersions(dirty, transactionId);
        dirty.Clear();

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
        Interlocked.Increment(ref _commits);
        Interlocked.Add(ref _pagesModified, stats.PagesModified);
        _flusher.NoteCommit(length);

        var ended = CommitProfile.Now();
        Interlocked.Increment(ref profile.Transactions);
        CommitProfile.Add(ref profile.BodyTicks, transaction.BeganTimestamp, commitStarted);
        Interlocked.Add(ref profile.ChecksumTicks, checksumTicks);
        Interlocked.Add(ref profile.DiffTicks, diffTicks);
        CommitProfile.Add(ref profile.FinishTicks, finishStarted, reserveStarted);
        CommitProfile.Add(ref profile.SwitchTicks, reserveStarted, writeStarted);
        CommitProfile.Add(ref profile.WriteTicks, writeStarted, written);
        Interlocked.Add(ref profile.PruneLockWaitTicks, pruneLockWait);
        CommitProfile.Add(ref profile.PublishTicks, written, ended);
        profile.CommitLatency.Record(ended - commitStarted);
        if (!lazy) profile.JournalWriteLatency.Record(written - writeStarted);
        _metrics.RecordCommit(ended - commitStarted, lazy ? -1 : written - writeStarted);
        return stats;
    }

    /// <summary>
    /// While lazy commits wait, the flusher may write only up to the last durable transaction, so the versions that
    /// state reads must stay as if a snapshot pinned it. Read after this commit's entry was appended: a write of lazy
    /// entries after that covers this commit too, whose versions are the newest anyway.
    /// </summary>
    internal void KeepDurablePoint(List<long> sortedSnapshots, long published)
    {
        var durable = Journal.DurableTransactionId;
        if (durable >= published) return;
        var at = sortedSnapshots.BinarySearch(durable);
        if (at < 0) sortedSnapshots.Insert(~at, durable);
    }

    /// <summary>Commits published but whose journal entries may not be durable yet (lazy ones), in order.</summary>
    private readonly Queue<CommitRecord> _commitRecords = new();

    /// <summary>
    /// Hands the flusher the commits whose journal entries are durable, in order: it may write a transaction's pages to
    /// the data file only then, or a crash could leave the data file ahead of the journal.
    /// </summary>
    internal void PassDurableCommits()
    {
        var durable = Journal.DurableTransactionId;
        lock (_commitRecords)
        {
            while (_commitRecords.TryPeek(out var record) && record.TransactionId <= durable)
            {
                _flusher.RecordCommit(_commitRecords.Dequeue());
            }
        }
    }

    /// <summary>Writes the entries of lazy commits waiting, durably, and passes them to the flusher (a failure poisons the environment).</summary>
    internal void WriteLazyCommits()
    {
        try
        {
            Journal.WriteLazy();
        }
        catch (Exception e)
        {
            Poison(e);
            throw;
        }
        PassDurableCommits();
    }

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
        lock (PruneLock)
        {
            waited = CommitProfile.Now() - waitStarted;
            // This commit's state is published (with a full fence) before the slots are read.
            Readers.CollectSnapshots(_snapshots);
            KeepDurablePoint(_snapshots, transactionId);
            var snapshots = System.Runtime.InteropServices.CollectionsMarshal.AsSpan(_snapshots);
            foreach (var (pageNumber, page) in dirty)
            {
                if (!page.IsFreed) PageTable.Prune(pageNumber, snapshots, transactionId, _pruned);
            }
        }
        foreach (var buffer in _pruned) Scratch.Return(buffer, onWriter: true);
        _pruned.Clear();
        if (Reclaimer.HasWaiting) Reclaimer.Reclaim(Readers.ReclaimableEpoch(), onWriter: true);
        return waited;
    }

    /// <summary>
    /// Flushes and syncs everything committed. Open read transactions keep their snapshot readable until
    /// they are disposed; the directory is released when the last of them is. A write transaction still open after
    /// <see cref="DisposeWriterWaitMs"/> is left to the journal: everything committed is durable there.
    /// </summary>
    public void Dispose()
    {
        if (_disposed) return;
        _disposed = true;
        var haveWriteLock = _writeLock.Wait(DisposeWriterWaitMs);
        _flusher.Stop();
        if (haveWriteLock && _poison is null)
        {
            try
            {
                WriteLazyCommits();
                _flusher.FlushAndSync(forceSync: true);
            }
            catch (Exception e) when (e is StorageException or IOException)
            {
                // Everything committed is in the journal; the next open replays it.
                Poison(e);
            }
        }
        Journal.Dispose();
        _flusher.Dispose();
        _metrics.Dispose();
        ReleaseLifetimeReference();
    }

    private const int DisposeWriterWaitMs = 10_000;

    /// <summary>Test seam: stops as a killed process would, without flushing, syncing or closing cleanly.</summary>
    internal void SimulateCrash()
    {
        if (_disposed) return;
        _disposed = true;
        _flusher.Stop();
        Journal.Dispose();
        _flusher.Dispose();
        _metrics.Dispose();
        // A killed process holds no lock: the directory is free at once (the test must not use old transactions).
        _lockHandle.Dispose();
        ReleaseLifetimeReference();
    }
}
