using System.Diagnostics;
using System.Runtime.InteropServices;
using Storage.Journal;
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
internal sealed class Flusher : IDisposable
{
    private const int MaxJournalFilesBeforeSync = 3;

    private readonly StorageEnvironment _env;
    private readonly Thread _thread;
    private readonly AutoResetEvent _wake = new(false);
    private readonly object _flushLock = new();
    private readonly object _commitsLock = new();
    private readonly Queue<CommitRecord> _commits = new();
    private readonly List<(long PageNumber, ScratchBuffer Buffer)> _pages = [];
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

    public Flusher(StorageEnvironment env, long syncedTransactionId, long headerSequence)
    {
        _env = env;
        _flushedUpTo = syncedTransactionId;
        _syncedUpTo = syncedTransactionId;
        _headerSequence = headerSequence;
        _thread = new Thread(Run) { IsBackground = true, Name = "Storage flusher" };
        Space = new SpaceReturner(env);
    }

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
        var limit = _env.Options.MaxJournalFileSizeBytes * MaxJournalFilesBeforeSync;
        if (_env.Scratch.BytesInUse > _env.Options.ScratchBudgetBytes || sinceFlush > limit || HoldsTooMuchOfSharedJournal())
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
        var journal = _env.Journal;
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
        while (!_stopping && !_env.IsPoisoned)
        {
            _wake.WaitOne(NextWaitMs());
            if (_stopping) break;
            if (!WriteLazyEntriesIfDue()) return;
            var signalled = Interlocked.Exchange(ref _flushRequested, 0) != 0;
            // Under load, flush when the budgets say so; otherwise once the environment has been idle for a flush interval.
            var idleMs = Stopwatch.GetElapsedTime(Volatile.Read(ref _lastCommitTimestamp)).TotalMilliseconds;
            if (signalled || idleMs >= _env.Options.FlushIntervalMs)
            {
                try
                {
                    FlushAndSync(forceSync: !signalled);
                }
                catch (Exception e)
                {
                    // The page cache may have dropped what failed to reach the disk: only the journal can repair it.
                    _env.Poison(e);
                    return;
                }
            }
            _env.ReaderMonitor.Check();
        }
    }

    /// <summary>Until the next flush interval, or until the oldest lazy entry waiting is due to be written.</summary>
    private int NextWaitMs()
    {
        var interval = _env.Options.FlushIntervalMs;
        var lazySince = _env.Journal.PendingSinceTimestamp;
        if (lazySince == 0) return interval;
        var left = _env.Options.LazyCommitDelay.TotalMilliseconds - Stopwatch.GetElapsedTime(lazySince).TotalMilliseconds;
        return (int)Math.Clamp(Math.Ceiling(left), 0, interval);
    }

    /// <summary>Writes the lazy commits' entries once the oldest has waited <see cref="StorageOptions.LazyCommitDelay"/>; false when that failed (the environment is poisoned).</summary>
    private bool WriteLazyEntriesIfDue()
    {
        var lazySince = _env.Journal.PendingSinceTimestamp;
        if (lazySince == 0 || Stopwatch.GetElapsedTime(lazySince) < _env.Options.LazyCommitDelay) return true;
        try
        {
            _env.WritePendingCommits();
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
    /// Throw <see cref="StorageFullException"/> when writing pages meets a full disk (<see cref="StorageEnvironment.Checkpoint"/>);
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
            _env.ThrowIfPoisoned();
            _metFullDisk = false;
            try
            {
                FlushOnce(throwIfFull);
                var due = forceSync
                    || _sinceSync.ElapsedMilliseconds >= _env.Options.SyncIntervalMs
                    || _env.Journal.FileCount >= MaxJournalFilesBeforeSync;
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
                _env.Poison(e);
                throw;
            }
            _env.Reclaimer.Reclaim(_env.Readers.ReclaimableEpoch(), onWriter: false);
            _env.Scratch.DecommitExcess();
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
        lock (_env.PruneLock)
        {
            var latest = _env.CurrentState.TransactionId;
            // Never inside a batch of records being handed over: pruning keeps what the batches' ends need.
            upTo = Math.Min(_env.Readers.OldestTransaction(latest), _env.HandedToFlusher);
            if (upTo <= _flushedUpTo) return;
            var taken = TakeRecordsUpTo(upTo);
            if (taken is null && _retryRecord is { } retry && retry.TransactionId <= upTo) taken = retry;
            if (taken is null) return;
            record = taken.Value;
            upTo = record.TransactionId;
            _collected.Clear();
            _env.PageTable.CollectFlushable(upTo, _collected);
            pin = _env.Readers.Pin(upTo);
        }
        try
        {
            WriteUpTo(upTo, record, throwIfFull);
        }
        finally
        {
            _env.Readers.Release(pin);
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
        var ended = _env.Readers.ReadersEnded;
        if (ended == _endedAtSweep) return;
        var latest = _env.CurrentState.TransactionId;
        if (_env.Readers.OldestTransaction(latest) >= latest) return;
        if (!force && Stopwatch.GetElapsedTime(_lastSweepTimestamp).Ticks < Math.Max(MinSweepIntervalMs * TimeSpan.TicksPerMillisecond, _lastSweepDuration.Ticks * 10)) return;
        var started = Stopwatch.GetTimestamp();
        lock (_env.PruneLock)
        {
            // The published state is read before the slots (see PageTable.Prune).
            var published = _env.CurrentState.TransactionId;
            // The prune point before the points kept: it reads the journal's count of writes under way first.
            var prunePoint = _env.PrunePoint(published);
            _env.Readers.CollectSnapshots(_snapshots);
            _env.KeepDurablePoint(_snapshots, published);
            _env.PageTable.PruneAll(CollectionsMarshal.AsSpan(_snapshots), prunePoint, _swept);
        }
        _endedAtSweep = ended;
        foreach (var buffer in _swept) _env.Scratch.Return(buffer, onWriter: false);
        _swept.Clear();
        _lastSweepTimestamp = Stopwatch.GetTimestamp();
        _lastSweepDuration = Stopwatch.GetElapsedTime(started);
    }

    /// <summary>A sweep walks the whole page table: at most this often.</summary>
    private const long MinSweepIntervalMs = 100;

    private void WriteUpTo(long upTo, CommitRecord record, bool throwIfFull)
    {
        var started = Stopwatch.GetTimestamp();
        Interlocked.Exchange(ref _journalBytesSinceFlush, 0);
        _collected.Sort(static (a, b) => a.PageNumber.CompareTo(b.PageNumber));
        SelectLiveVersions(record.NextPageNumber);
        long end = record.NextPageNumber, pages = 0, bytes = 0, leaves = 0, branches = 0, overflows = 0;
        foreach (var (page, buffer) in _pages)
        {
            end = Math.Max(end, page + buffer.PageCount);
            Space.NoteFlushed(page);
            pages += buffer.PageCount;
            bytes += buffer.SizeBytes;
            CountType(buffer, ref leaves, ref branches, ref overflows);
        }
        int runs;
        long gapPages = 0;
        try
        {
            _env.DataFile.EnsurePageCount(end);
            var mapping = _env.DataFile.AcquireMapping();
            try
            {
                gapPages = FillGaps(mapping);
                runs = _pages.Count == 0 ? 0 : _env.DataFile.WriteSorted(_pages);
            }
            finally
            {
                mapping.Release();
            }
        }
        catch (StorageFullException)
        {
            // Commits reserve the space their pages take, so only a file system that cannot reserve (or one that
            // allocates anew on every write) gets here. The pages written so far hold what the journal holds; the rest
            // were not written. The versions stay in the page table, and the flush is taken up again from this commit.
            _pages.Clear();
            _collected.Clear();
            _retryRecord = record;
            _retryAfterTimestamp = Stopwatch.GetTimestamp() + FullDiskRetryMs * Stopwatch.Frequency / 1000;
            FlushesDeferredForSpace++;
            if (!throwIfFull) return;
            _metFullDisk = true;
            throw;
        }
        _retryRecord = null;
        _retryAfterTimestamp = 0;
        bytes += gapPages * PageLayout.PageSizeBytes;

        _removed.Clear();
        _env.PageTable.RemoveUpTo(upTo, _collected, _removed);
        _env.Reclaimer.Retire(_removed, _env.Readers.AdvanceEpoch());
        _pages.Clear();
        _collected.Clear();

        _flushedUpTo = upTo;
        _flushedRecord = record;
        Flushes++;
        FlushedPages += pages;
        FlushRuns += runs;
        FlushedBytes += bytes;
        NotifyFlush(new FlushStats
        {
            FlushNumber = Flushes,
            UpToTransactionId = upTo,
            PagesWritten = pages,
            Runs = runs,
            BytesWritten = bytes,
            LeafPages = leaves,
            BranchPages = branches,
            OverflowPages = overflows,
            GapPagesWritten = gapPages,
            Duration = Stopwatch.GetElapsedTime(started),
        });
    }

    private void NotifyFlush(in FlushStats stats)
    {
        try
        {
            _env.Options.OnFlush?.Invoke(stats);
        }
        catch (Exception)
        {
            // A failing observer must not stop the flusher, which would poison the environment.
        }
    }

    /// <summary>
    /// Picks what to write from the collected versions (sorted by page). Where two overlap, the older is dead:
    /// its pages were freed before the newer one was allocated over them (an overflow run reusing a freed
    /// page, or the reverse), so writing it would overwrite live data with garbage. It is dropped, and so is a version of
    /// a page at or past the state's end (the end moved down over it: it is free, and writing it would only make the file
    /// longer again).
    /// </summary>
    private void SelectLiveVersions(long nextPageNumber)
    {
        _pages.Clear();
        var collected = CollectionsMarshal.AsSpan(_collected);
        for (var i = 0; i < collected.Length; i++)
        {
            if (collected[i].Dropped) continue;
            var end = collected[i].PageNumber + collected[i].Buffer.PageCount;
            for (var j = i + 1; j < collected.Length && collected[j].PageNumber < end; j++)
            {
                Debug.Assert(collected[i].TransactionId != collected[j].TransactionId, "one transaction's pages never overlap");
                if (collected[i].TransactionId < collected[j].TransactionId)
                {
                    collected[i].Dropped = true;
                    break;
                }
                collected[j].Dropped = true;
            }
            if (!collected[i].Dropped && end <= nextPageNumber) _pages.Add((collected[i].PageNumber, collected[i].Buffer));
        }
    }

    private readonly List<(long PageNumber, ScratchBuffer Buffer)> _withGaps = [];

    /// <summary>
    /// The seek cost model (<see cref="StorageOptions.FlushGapFillBytes"/>): between two runs of pages to write, a gap of
    /// clean pages short enough, in the page cache, and not given back to the file system, is written back unchanged from
    /// the map (which holds exactly what the file holds: only this thread writes it), so the two runs become one write.
    /// Returns the clean pages added.
    /// </summary>
    private unsafe long FillGaps(DataFileMapping mapping)
    {
        var maxGap = _env.Options.FlushGapFillBytes / PageLayout.PageSizeBytes;
        if (maxGap <= 0 || _pages.Count < 2 || !Platform.Posix.IsSupported) return 0;
        _withGaps.Clear();
        long filled = 0;
        for (var i = 0; i < _pages.Count; i++)
        {
            _withGaps.Add(_pages[i]);
            if (i + 1 == _pages.Count) break;
            var gapStart = _pages[i].PageNumber + _pages[i].Buffer.PageCount;
            var gap = _pages[i + 1].PageNumber - gapStart;
            if (gap <= 0 || gap > maxGap || gapStart + gap > mapping.PageCount || _env.DataFile.IsHole(gapStart, gap)) continue;
            var pointer = mapping.PagePointer(gapStart);
            if (!Resident(pointer, gap * PageLayout.PageSizeBytes)) continue;
            _withGaps.Add((gapStart, ScratchBuffer.ViewOf(pointer, (int)gap)));
            filled += gap;
        }
        if (filled == 0) return 0;
        _pages.Clear();
        _pages.AddRange(_withGaps);
        _withGaps.Clear();
        return filled;
    }

    /// <summary>Whether the range is in the page cache (mincore): writing back a page that is not would read it first.</summary>
    private static unsafe bool Resident(byte* pointer, long lengthBytes)
    {
        const int osPage = 4096;
        var start = (byte*)((nuint)pointer & ~(nuint)(osPage - 1));
        var length = (nuint)(pointer + lengthBytes - start);
        var pages = (int)((length + osPage - 1) / osPage);
        Span<byte> vector = stackalloc byte[Math.Min(pages, 256)];
        if (pages > vector.Length) return false;
        fixed (byte* v = vector)
        {
            if (Platform.Posix.MinCore(start, length, v) != 0) return false;
        }
        foreach (var b in vector)
        {
            if ((b & 1) == 0) return false;
        }
        return true;
    }

    private static unsafe void CountType(ScratchBuffer buffer, ref long leaves, ref long branches, ref long overflows)
    {
        var flags = ((PageHeader*)buffer.Pointer)->Flags;
        if ((flags & PageFlags.Leaf) != 0) leaves++;
        else if ((flags & PageFlags.Branch) != 0) branches++;
        else if ((flags & PageFlags.Overflow) != 0) overflows += buffer.PageCount;
    }

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

    private void Sync()
    {
        var record = _flushedRecord!.Value;
        _env.DataFile.WriteBackInSteps();
        _env.DataFile.Sync();
        _headerSequence++;
        FileHeaderIo.Write(_env.DataFile, FileHeader.Synced(_env.EnvironmentId, _headerSequence, record));
        _env.DataFile.Sync();
        Volatile.Write(ref _syncedUpTo, record.TransactionId);
        Syncs++;
        _sinceSync.Restart();
        _env.Journal.Retire(record.JournalFileNumber);
    }

    /// <summary>
    /// At a clean close, when the synced state is the last committed one: writes a header that says the journal goes on
    /// at <paramref name="fileNumber"/> (a new, empty file), then retires the files before it. False when not everything
    /// is synced (a reader held the flush back), and nothing changes.
    /// </summary>
    public bool MoveJournalStart(long lastTransactionId, long fileNumber, long offsetBytes)
    {
        lock (_flushLock)
        {
            if (_flushedRecord is not { } record || record.TransactionId != _syncedUpTo || record.TransactionId != lastTransactionId) return false;
            var moved = record with { JournalFileNumber = fileNumber, JournalEndOffsetBytes = offsetBytes };
            _headerSequence++;
            FileHeaderIo.Write(_env.DataFile, FileHeader.Synced(_env.EnvironmentId, _headerSequence, moved));
            _env.DataFile.Sync();
            _flushedRecord = moved;
            _env.Journal.Retire(fileNumber);
            return true;
        }
    }

    /// <summary>
    /// A member of an environment group with shared journals gets a link to every new shared file, whether it commits or
    /// not: once everything it committed is synced and nothing is on its way (the write lock held, taken only if free),
    /// the header moves to where its journal goes on now and the older links go, so an idle member does not keep the
    /// group's old files. Called under the flush lock.
    /// </summary>
    private void MoveIdleMemberStart(bool writerHeld)
    {
        var member = _env.Journal;
        if (!member.IsShared || member.FileCount <= 1) return;
        if (!writerHeld && !_env.TryEnterWriteLock(0)) return;
        try
        {
            var state = _env.WriterState;
            var last = state.TransactionId;
            if (_syncedUpTo != last || member.DurableTransactionId < last || member.HasPendingEntries) return;
            var (number, offset) = member.Position;
            var record = _flushedRecord ?? new CommitRecord(last, number, offset, state.NextPageNumber, state.RootTree);
            if (record.TransactionId != last || number <= record.JournalFileNumber && _flushedRecord is not null) return;
            var moved = record with { JournalFileNumber = number, JournalEndOffsetBytes = offset };
            _headerSequence++;
            FileHeaderIo.Write(_env.DataFile, FileHeader.Synced(_env.EnvironmentId, _headerSequence, moved));
            _env.DataFile.Sync();
            _flushedRecord = moved;
            member.Retire(number);
        }
        finally
        {
            if (!writerHeld) _env.ReleaseWriteLock();
        }
    }

    /// <summary>Whether everything up to <paramref name="lastTransactionId"/> is synced to the data file.</summary>
    public bool IsSyncedThrough(long lastTransactionId)
    {
        lock (_flushLock) return _flushedRecord is { } record && record.TransactionId == _syncedUpTo && _syncedUpTo == lastTransactionId;
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
