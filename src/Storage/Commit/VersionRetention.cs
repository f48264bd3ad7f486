using System.Runtime.InteropServices;
using Storage.Collections;
using Storage.Journal;
using Storage.Paging;
using Storage.Scratch;
using Storage.State;
using Storage.Transactions;

namespace Storage.Commit;

/// <summary>
/// Which page versions in the page table must be kept, and the giving back of those no one needs: the writer prunes what
/// each commit superseded, the flusher sweeps what readers that have ended were keeping. A version stays while an open
/// snapshot sees it, and while a flush may still aim at a commit that needs it: the last commit handed to the flusher
/// and the last durable one are kept as if snapshots pinned them (see <see cref="PrunePoint"/>). The flusher has every
/// commit up to the synced one at open (the last constructor argument).
/// </summary>
internal sealed class VersionRetention(PageTable pageTable, ReaderTable readers, EnvironmentStates states, IEnvironmentJournal journal,
    ScratchPool scratch, ScratchReclaimer reclaimer, long handedToFlusher)
{
    /// <summary>
    /// How many pages of <see cref="_pruneAfterDurable"/> one commit prunes at most: a lazy write makes thousands durable
    /// at once, and pruning them all in the next commit would hold it up for milliseconds.
    /// </summary>
    private const int MaxPrunesAfterDurablePerCommit = 1024;

    /// <summary>The most pages <see cref="_pruneAfterDurable"/> holds (2 MiB of queue).</summary>
    private const int MaxPrunesAfterDurableQueued = 1 << 17;

    private readonly List<ScratchBuffer> _pruned = [];
    private readonly List<long> _snapshots = [];

    /// <summary>Pages of commits that were not yet visible when they pruned, oldest commit first (the writer's own).</summary>
    private readonly SegmentedQueue<(long TransactionId, long PageNumber)> _pruneAgain = new();

    /// <summary>Pages of lazy commits that were not yet durable when they pruned, oldest commit first (the writer's own).</summary>
    private readonly SegmentedQueue<(long TransactionId, long PageNumber)> _pruneAfterDurable = new();

    /// <summary>The last commit of the last batch of records handed to the flusher: no flush aims at a later one.</summary>
    private long _handedToFlusher = handedToFlusher;

    /// <summary>Taken by the writer to prune superseded versions and by the flusher to choose and collect what it writes.</summary>
    public Lock PruneLock { get; } = new();

    /// <inheritdoc cref="_handedToFlusher"/>
    public long HandedToFlusher => Volatile.Read(ref _handedToFlusher);

    /// <summary>The flusher has every commit record up to <paramref name="transactionId"/> (set once per batch, after the flusher has them all).</summary>
    public void HandedOver(long transactionId) => Volatile.Write(ref _handedToFlusher, transactionId);

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
    public long PrunePoint(long published) =>
        journal.WritesUnderWay == 0 ? published : Math.Min(published, HandedToFlusher);

    /// <summary>
    /// While lazy commits wait, the flusher may write only up to the last durable transaction, so the versions that
    /// state reads must stay as if a snapshot pinned it. Read after this commit's entry was appended: a write of lazy
    /// entries after that covers this commit too, whose versions are the newest anyway.
    /// </summary>
    private void KeepDurablePoint(List<long> sortedSnapshots, long published)
    {
        // The last commit handed to the flusher first: a flush may aim there until it has a later one (see PrunePoint).
        Keep(sortedSnapshots, HandedToFlusher, published);
        Keep(sortedSnapshots, journal.DurableTransactionId, published);

        static void Keep(List<long> sortedSnapshots, long point, long published)
        {
            if (point >= published) return;
            var at = sortedSnapshots.BinarySearch(point);
            if (at < 0) sortedSnapshots.Insert(~at, point);
        }
    }

    /// <summary>
    /// The versions a commit superseded are garbage unless a snapshot still reads them; giving them back now keeps scratch
    /// memory proportional to distinct dirty pages and the versions open snapshots see, rather than to every version since
    /// the oldest snapshot. A dropped version is one no snapshot can reach (see <see cref="PageTable.Prune"/>), so its buffer
    /// is reused at once; buffers the flusher removed wait for their epoch in the reclaimer. Called by the writer, after the
    /// commit's versions went into the page table.
    /// </summary>
    /// <returns>The stopwatch ticks spent waiting for <see cref="PruneLock"/>.</returns>
    public long PruneSuperseded(Dictionary<long, DirtyPage> dirty, long transactionId)
    {
        var waitStarted = Diagnostics.CommitProfile.Now();
        long waited;
        long published;
        long settled;
        lock (PruneLock)
        {
            waited = Diagnostics.CommitProfile.Now() - waitStarted;
            // The published state is read before the slots: a reader missing from them registers on that state or a
            // newer one. Every version newer than it is kept (commits waiting for their durable write among them), and
            // every version newer than the last commit handed to the flusher (see PrunePoint).
            published = states.Readable.TransactionId;
            var prunePoint = PrunePoint(published);
            // Commits after this one the flusher does not have yet: what they superseded may be kept for it.
            settled = Math.Min(published, HandedToFlusher);
            readers.CollectSnapshots(_snapshots);
            KeepDurablePoint(_snapshots, published);
            var snapshots = CollectionsMarshal.AsSpan(_snapshots);
            // Then pages of earlier commits pruned while they waited for their write: what they superseded may go now.
            pageTable.PruneCommitted(dirty, _pruneAgain, snapshots, prunePoint, _pruned);
            // And pages of lazy commits the flusher now has: the versions kept before them may go.
            pageTable.PruneQueued(_pruneAfterDurable, settled, MaxPrunesAfterDurablePerCommit, snapshots, prunePoint, _pruned);
        }
        QueueForLater(dirty, transactionId, published, settled);
        foreach (var buffer in _pruned) scratch.Return(buffer, onWriter: true);
        _pruned.Clear();
        if (reclaimer.HasWaiting) reclaimer.Reclaim(readers.ReclaimableEpoch(), onWriter: true);
        return waited;
    }

    /// <summary>Pages whose superseded versions had to stay for now are queued to be pruned again once they may go.</summary>
    private void QueueForLater(Dictionary<long, DirtyPage> dirty, long transactionId, long published, long settled)
    {
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
    }

    /// <summary>
    /// Versions kept for a reader that has ended stay until their page changes again or is flushed; while an older
    /// snapshot holds the flush back, that may be never. The flusher sweeps the whole table for them now and then: the
    /// versions no snapshot (nor a flush) needs are removed into <paramref name="swept"/>, for the caller to give back.
    /// </summary>
    public void SweepAll(List<long> snapshots, List<ScratchBuffer> swept)
    {
        lock (PruneLock)
        {
            // The published state is read before the slots (see PageTable.Prune).
            var published = states.Readable.TransactionId;
            // The prune point before the points kept: it reads the journal's count of writes under way first.
            var prunePoint = PrunePoint(published);
            readers.CollectSnapshots(snapshots);
            KeepDurablePoint(snapshots, published);
            pageTable.PruneAll(CollectionsMarshal.AsSpan(snapshots), prunePoint, swept);
        }
    }
}
