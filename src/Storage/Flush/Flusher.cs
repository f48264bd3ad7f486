using System.Diagnostics;
using Storage.Paging;
using Storage.Scratch;
using Storage.State;
using Storage.Transactions;

namespace Storage.Flush;

/// <summary>
/// The high-occupancy lane: writes committed page versions to the data file in the background (sorted,
/// adjacent pages merged into one write), never past the oldest snapshot in use; then, less often,
/// syncs the data file, writes the other header slot, and retires journal files the header no longer needs.
/// </summary>
internal sealed partial class Flusher : IDisposable
{
    private const int MaxJournalFilesBeforeSync = 3;

    private readonly FlushPort _port;
    private readonly Thread _thread;
    private readonly AutoResetEvent _wake = new(false);
    private readonly object _flushLock = new();
    private readonly object _commitsLock = new();
    private readonly Collections.SegmentedQueue<CommitRecord> _commits = new();
    private List<(long PageNumber, ScratchBuffer Buffer)> _pages = [];
    private readonly List<ScratchBuffer> _removed = [];
    private readonly List<FlushCandidate> _collected = [];
    private readonly List<ScratchBuffer> _swept = [];
    private readonly List<long> _snapshots = [];
    private long _endedAtSweep;
    private long _lastSweepTimestamp;
    private TimeSpan _lastSweepDuration;
    private readonly Stopwatch _sinceSync = Stopwatch.StartNew();
    private long _lastCommitTimestamp;
    private long _journalBytesSinceFlush;
    private volatile bool _stopping;
    private int _flushRequested;
    private long _flushedUpTo;
    private CommitRecord? _flushedRecord;
    private long _syncedUpTo;
    private long _headerSequence;

    /// <summary>The last commit a flush took and could not write for want of space: the next flush starts from it again.</summary>
    private CommitRecord? _retryRecord;

    /// <summary>After a flush met a full disk, none before this <see cref="Stopwatch"/> timestamp.</summary>
    private long _retryAfterTimestamp;

    /// <summary>Set when this flush met a full disk while writing: nothing was lost, so the caller's failure poisons nothing.</summary>
    private bool _metFullDisk;

    public Flusher(FlushPort port, long syncedTransactionId, long headerSequence)
    {
        _port = port;
        _flushedUpTo = syncedTransactionId;
        _syncedUpTo = syncedTransactionId;
        _headerSequence = headerSequence;
        _thread = new Thread(Run) { IsBackground = true, Name = "Storage flusher" };
        Space = new SpaceReturner(port);
        // The lists a flush fills, sized once for the pages the scratch budget holds. Grown by doubling instead, each step
        // past 85,000 bytes is a large object, and a few of them make the collector run a full (gen2) collection.
        var pages = FlushListPages(port.Options);
        _collected.Capacity = pages;
        // With the clean gaps between them filled (FillGaps), a flush's pages may take up to twice as many entries.
        _pages.Capacity = 2 * pages;
        _withGaps.Capacity = 2 * pages;
        _removed.Capacity = pages;
    }

    /// <summary>The pages the flush's lists are sized for up front (past that they grow as they need).</summary>
    internal static int FlushListPages(StorageOptions options) => (int)Math.Min(options.ScratchBudgetBytes / PageLayout.PageSizeBytes, MaxPresizedPages);

    /// <summary>A little over the default budget's pages: a larger budget's lists grow past it as they need.</summary>
    private const int MaxPresizedPages = 40 * 1024;

    /// <summary>Gives free space back to the file system after syncs.</summary>
    public SpaceReturner Space { get; }

    public long Flushes { get; private set; }

    public long FlushedPages { get; private set; }

    public long FlushRuns { get; private set; }

    public long FlushedBytes { get; private set; }

    /// <summary>Flushes that met a full disk while writing pages and left them to a later flush.</summary>
    public long FlushesDeferredForSpace { get; private set; }

    public long Syncs { get; private set; }

    public long SyncedUpTo => Volatile.Read(ref _syncedUpTo);

    public void Start() => _thread.Start();

    public void RecordCommit(in CommitRecord record)
    {
        lock (_commitsLock) _commits.Enqueue(record);
    }

    /// <summary>Wakes the flusher; does nothing once it is disposed (a commit that is durable must not throw here).</summary>
    public void Wake()
    {
        try
        {
            _wake.Set();
        }
        catch (ObjectDisposedException)
        {
        }
    }

    /// <summary>Wakes the flusher to flush now.</summary>
    private void RequestFlush()
    {
        Volatile.Write(ref _flushRequested, 1);
        Wake();
    }

    /// <summary>Called by the writer after each commit: wakes the flusher when scratch memory or the journal pass their budgets.</summary>
    public void NoteCommit(long journalBytes)
    {
        Volatile.Write(ref _lastCommitTimestamp, Stopwatch.GetTimestamp());
        var sinceFlush = Interlocked.Add(ref _journalBytesSinceFlush, journalBytes);
        var limit = _port.Options.MaxJournalFileSizeBytes * MaxJournalFilesBeforeSync;
        if (_port.Scratch.BytesInUse > _port.Options.ScratchBudgetBytes || sinceFlush > limit || HoldsTooMuchOfSharedJournal())
        {
            RequestFlush();
        }
    }

    /// <summary>The shared journal's size this member held when it last asked for a flush for it (or less, once names went).</summary>
    private long _sharedHeldAtRequest;

    /// <summary>
    /// A member of a group with shared journals holds a name for every shared file, whose entries are mostly the other
    /// members': counting only its own entries, it would keep the group's files (and their disk space) until it had written
    /// as many itself, and no file could be reused. So it also asks for a flush once it holds more than an environment's own
    /// journal would between syncs, and again for each further file while its names cannot go.
    /// </summary>
    private bool HoldsTooMuchOfSharedJournal()
    {
        var journal = _port.Journal;
        if (!journal.IsShared) return false;
        var held = journal.TotalBytes;
        var limit = journal.HeldBytesBeforeFlush(MaxJournalFilesBeforeSync);
        var last = Volatile.Read(ref _sharedHeldAtRequest);
        if (held < last)
        {
            last = held;
            Volatile.Write(ref _sharedHeldAtRequest, held);
        }
        if (held <= limit || held < last + limit / MaxJournalFilesBeforeSync) return false;
        Volatile.Write(ref _sharedHeldAtRequest, held);
        return true;
    }

    private void Run()
    {
        // A poisoned environment writes nothing more: after a failed fsync the page cache may have dropped pages, and
        // a later fsync that succeeds says nothing about them. Only reopening (replaying the journal) repairs that.
        while (!_stopping && !_port.Health.IsPoisoned)
        {
            _wake.WaitOne(NextWaitMs());
            if (_stopping) break;
            if (!WriteLazyEntriesIfDue()) return;
            var signalled = Interlocked.Exchange(ref _flushRequested, 0) != 0;
            // Under load, flush when the budgets say so; otherwise once the environment has been idle for a flush interval.
            var idleMs = Stopwatch.GetElapsedTime(Volatile.Read(ref _lastCommitTimestamp)).TotalMilliseconds;
            if (signalled || idleMs >= _port.Options.FlushInterval.TotalMilliseconds)
            {
                try
                {
                    FlushAndSync(forceSync: !signalled);
                }
                catch (Exception e)
                {
                    // The page cache may have dropped what failed to reach the disk: only the journal can repair it.
                    _port.Health.Poison(e);
                    return;
                }
            }
            _port.ReaderMonitor.Check();
        }
    }

    /// <summary>
    /// Lazy entries are written once this many bytes of them wait, however short they have waited: at a high commit rate
    /// the delay alone lets tens of MiB wait, and the page versions kept for the durable point with them (W1-lazy flushed
    /// twice the pages W1 did, and held 86 MiB more at its peak).
    /// </summary>
    public const long LazyWriteBytes = 4 << 20;

    /// <summary>Whether <see cref="LazyWriteBytes"/> of entries wait: they are written now, whatever the delay.</summary>
    private bool LazyEntriesFillABatch => _port.Journal.PendingBytes >= LazyWriteBytes;

    /// <summary>Until the next flush interval, or until the oldest lazy entry waiting is due to be written.</summary>
    private int NextWaitMs()
    {
        var interval = (int)Math.Ceiling(_port.Options.FlushInterval.TotalMilliseconds);
        var lazySince = _port.Journal.PendingSinceTimestamp;
        if (lazySince == 0) return interval;
        if (LazyEntriesFillABatch) return 0;
        var left = _port.Options.LazyCommitDelay.TotalMilliseconds - Stopwatch.GetElapsedTime(lazySince).TotalMilliseconds;
        return (int)Math.Clamp(Math.Ceiling(left), 0, interval);
    }

    /// <summary>
    /// Writes the lazy commits' entries once the oldest has waited <see cref="StorageOptions.LazyCommitDelay"/> or
    /// <see cref="LazyWriteBytes"/> of them wait; false when that failed (the environment is poisoned).
    /// </summary>
    private bool WriteLazyEntriesIfDue()
    {
        var lazySince = _port.Journal.PendingSinceTimestamp;
        if (lazySince == 0 || (!LazyEntriesFillABatch && Stopwatch.GetElapsedTime(lazySince) < _port.Options.LazyCommitDelay)) return true;
        try
        {
            _port.Journal.WritePending();
            return true;
        }
        catch (Exception)
        {
            // WritePendingCommits poisoned the environment: the journal position is no longer trustworthy.
            return false;
        }
    }

    /// <summary>
    /// Flushes what the snapshots allow, then syncs if due (or if <paramref name="forceSync"/>), then gives back versions
    /// kept for readers that have ended (at once if <paramref name="forceSweep"/>, otherwise when the sweep's rate allows).
    /// </summary>
    /// <param name="forceSync">Sync even if no sync is due yet.</param>
    /// <param name="forceSweep">Sweep the page table for ended readers now.</param>
    /// <param name="throwIfFull">
    /// Throw <see cref="StorageFullException"/> when writing pages meets a full disk (a checkpoint);
    /// otherwise (the background) the flush is left to a later one. Either way nothing is lost and nothing is poisoned:
    /// pages written before the refusal hold what the journal holds, the rest were not written, and the versions stay
    /// in the page table, readable and waiting.
    /// </param>
    /// <param name="writerHeld">The caller holds the write lock (closing): giving space back needs it and must not wait for it.</param>
    public void FlushAndSync(bool forceSync, bool forceSweep = false, bool throwIfFull = false, bool writerHeld = false)
    {
        lock (_flushLock)
        {
            // Checked under the lock: a flush that failed on another thread poisoned the environment before releasing it.
            _port.Health.ThrowIfPoisoned();
            _metFullDisk = false;
            try
            {
                FlushOnce(throwIfFull);
                var due = forceSync
                    || _sinceSync.ElapsedMilliseconds >= _port.Options.SyncInterval.TotalMilliseconds
                    || _port.Journal.FileCount >= MaxJournalFilesBeforeSync;
                var synced = due && _flushedUpTo > _syncedUpTo;
                if (synced) Sync();
                else if (forceSync) MoveIdleMemberStart(writerHeld);
                // With nothing flushed past the synced state, the file holds exactly it: space can go back now.
                if ((synced || forceSync) && _flushedRecord is { } record && record.TransactionId == _syncedUpTo) Space.AfterSync(record, writerHeld);
                PruneForEndedReaders(forceSweep);
            }
            catch (StorageFullException) when (_metFullDisk)
            {
                throw;
            }
            catch (Exception e)
            {
                _port.Health.Poison(e);
                throw;
            }
            _port.Reclaimer.Reclaim(_port.Readers.ReclaimableEpoch(), onWriter: false);
            _port.Scratch.DecommitExcess();
        }
    }

    private void FlushOnce(bool throwIfFull)
    {
        if (!throwIfFull && _retryAfterTimestamp != 0 && Stopwatch.GetTimestamp() < _retryAfterTimestamp) return;
        long upTo;
        CommitRecord record;
        ReaderTable.Slot pin;
        // Choosing F, collecting the newest version at or before F of every page, and pinning F happen under
        // the lock the writer prunes under: a commit can then never drop a version this flush is to write.
        lock (_port.Versions.PruneLock)
        {
            var latest = _port.States.Readable.TransactionId;
            // Never inside a batch of records being handed over: pruning keeps what the batches' ends need.
            upTo = Math.Min(_port.Readers.OldestTransaction(latest), _port.Versions.HandedToFlusher);
            if (upTo <= _flushedUpTo) return;
            var taken = TakeRecordsUpTo(upTo);
            if (taken is null && _retryRecord is { } retry && retry.TransactionId <= upTo) taken = retry;
            if (taken is null) return;
            record = taken.Value;
            upTo = record.TransactionId;
            _collected.Clear();
            _port.PageTable.CollectFlushable(upTo, _collected);
            pin = _port.Readers.Pin(upTo);
        }
        try
        {
            WriteUpTo(upTo, record, throwIfFull);
        }
        finally
        {
            _port.Readers.Release(pin);
        }
    }

    /// <summary>After a flush met a full disk, the background tries again no sooner than this.</summary>
    private const int FullDiskRetryMs = 1_000;

    /// <summary>
    /// A commit drops the versions of the pages it changes that no snapshot sees; versions kept for a reader that
    /// has ended since stay until their page changes again or is flushed. While an older snapshot holds the flush
    /// back, that may be never, so once readers have ended the flusher sweeps the whole table (at most every
    /// <see cref="MinSweepIntervalMs"/>, and at most a tenth of the time, unless <paramref name="force"/>).
    /// </summary>
    private void PruneForEndedReaders(bool force)
    {
        var ended = _port.Readers.ReadersEnded;
        if (ended == _endedAtSweep) return;
        var latest = _port.States.Readable.TransactionId;
        if (_port.Readers.OldestTransaction(latest) >= latest) return;
        if (!force && Stopwatch.GetElapsedTime(_lastSweepTimestamp).Ticks < Math.Max(MinSweepIntervalMs * TimeSpan.TicksPerMillisecond, _lastSweepDuration.Ticks * 10)) return;
        var started = Stopwatch.GetTimestamp();
        _port.Versions.SweepAll(_snapshots, _swept);
        _endedAtSweep = ended;
        foreach (var buffer in _swept) _port.Scratch.Return(buffer, onWriter: false);
        _swept.Clear();
        _lastSweepTimestamp = Stopwatch.GetTimestamp();
        _lastSweepDuration = Stopwatch.GetElapsedTime(started);
    }

    /// <summary>A sweep walks the whole page table: at most this often.</summary>
    private const long MinSweepIntervalMs = 100;

    private CommitRecord? TakeRecordsUpTo(long upTo)
    {
        CommitRecord? last = null;
        lock (_commitsLock)
        {
            while (_commits.TryPeek(out var next) && next.TransactionId <= upTo)
            {
                last = _commits.Dequeue();
            }
        }
        return last;
    }

    /// <summary>Stops the thread; a last flush and sync is the caller's.</summary>
    public void Stop()
    {
        _stopping = true;
        _wake.Set();
        if (_thread.IsAlive) _thread.Join();
    }

    public void Dispose()
    {
        Stop();
        _wake.Dispose();
    }
}
