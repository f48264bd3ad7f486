using System.Diagnostics;
using Storage.Paging;
using Storage.Scratch;
using Storage.State;

namespace Storage.Transactions;

/// <summary>
/// Watches the snapshots in use: how old the oldest reader is and how much scratch open snapshots pin. On the
/// flusher's thread (at most every <see cref="MinCheckIntervalMs"/>) it raises the reader warning, applies the
/// limit policy, and turns scratch spilling on and off; the commit path asks it whether commits are refused.
/// Also counts and reports leaked transactions.
/// </summary>
internal sealed class ReaderMonitor(StorageOptions options, ReaderTable readers, PageTable pageTable, ScratchPool scratch, EnvironmentStates states)
{
    /// <summary>A check walks the page table: at most this often (the flusher may be woken by every commit).</summary>
    private const long MinCheckIntervalMs = 100;

    private readonly object _checkLock = new();
    private ReaderPressure _last = new(null, 0, 0);
    private long _lastCheckTimestamp;
    private ReaderTable.ReaderInfo? _warned;
    private ReaderTable.ReaderInfo? _limited;
    private volatile bool _refusingCommits;
    private long _warnings;
    private long _readersEnded;
    private long _commitsRefused;
    private long _leaked;

    /// <summary>Warnings and limits reached since open.</summary>
    public long Warnings => Interlocked.Read(ref _warnings);

    /// <summary>Readers asked to end by <see cref="ReaderLimitPolicy.EndOldestReader"/>.</summary>
    public long ReadersEnded => Interlocked.Read(ref _readersEnded);

    /// <summary>Commits refused by <see cref="ReaderLimitPolicy.FailCommits"/>.</summary>
    public long CommitsRefused => Interlocked.Read(ref _commitsRefused);

    /// <summary>Transactions found collected without having been disposed.</summary>
    public long Leaked => Interlocked.Read(ref _leaked);

    /// <summary>
    /// A fresh look: the oldest reader from the slots and, when some snapshot is older than the latest commit, the pinned
    /// bytes from a walk of the page table. Safe on any thread.
    /// </summary>
    public ReaderPressure Measure()
    {
        var latest = states.Readable.TransactionId;
        var oldestSnapshot = readers.OldestTransaction(latest);
        var reader = readers.OldestReader();
        var pinned = oldestSnapshot < latest ? pageTable.PinnedBytes(oldestSnapshot) : 0;
        var pressure = new ReaderPressure(reader, pinned, Stopwatch.GetTimestamp());
        Volatile.Write(ref _last, pressure);
        return pressure;
    }

    /// <summary>The last measurement when it is recent, otherwise a new one (for metric collections, which read several instruments at once).</summary>
    public ReaderPressure Recent()
    {
        var last = Volatile.Read(ref _last);
        return Stopwatch.GetElapsedTime(last.Timestamp).TotalMilliseconds < MinCheckIntervalMs ? last : Measure();
    }

    /// <summary>Runs on the flusher's thread, at most every <see cref="MinCheckIntervalMs"/>. Never throws: a failing check must not stop the flusher.</summary>
    public void Check()
    {
        if (Stopwatch.GetElapsedTime(Volatile.Read(ref _lastCheckTimestamp)).TotalMilliseconds < MinCheckIntervalMs) return;
        CheckNow();
    }

    /// <summary>A check now, whenever the last one was (tests call it to decide spilling and limits at a known point).</summary>
    public void CheckNow()
    {
        lock (_checkLock)
        {
            Volatile.Write(ref _lastCheckTimestamp, Stopwatch.GetTimestamp());
            try
            {
                var pressure = Measure();
                UpdateSpill(pressure.PinnedBytes);
                ApplyThresholds(pressure);
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                Debug.Fail($"The reader check failed: {e}");
            }
        }
    }

    /// <summary>
    /// Scratch spills to the scratch file while memory is past the budget and snapshots pin at least the excess (the
    /// flusher cannot bring it back); the file goes once nothing is left in it.
    /// </summary>
    private void UpdateSpill(long pinnedBytes)
    {
        if (scratch.SpillFile is not { } file) return;
        var excess = scratch.MemoryBytes - options.ScratchBudgetBytes;
        var spill = (excess > 0 && pinnedBytes >= excess) || (options.Hooks.SpillWhenPinned && pinnedBytes > 0);
        scratch.Spilling = spill;
        if (!spill) file.DeleteIfUnused();
    }

    private void ApplyThresholds(ReaderPressure pressure)
    {
        if (pressure.Reader is not { } reader)
        {
            _refusingCommits = false;
            return;
        }
        var age = reader.Age;
        if (!IsSameReader(_warned, reader) && (Reached(age, options.ReaderWarningAge) || pressure.PinnedBytes >= options.ReaderWarningPinnedBytes))
        {
            _warned = reader;
            Notify(reader, pressure.PinnedBytes, limitReached: false, ReaderLimitPolicy.None);
        }
        var over = IsOverLimit(age, pressure.PinnedBytes);
        switch (options.ReaderLimitPolicy)
        {
            case ReaderLimitPolicy.FailCommits:
                _refusingCommits = over;
                if (over && !IsSameReader(_limited, reader))
                {
                    _limited = reader;
                    Notify(reader, pressure.PinnedBytes, limitReached: true, ReaderLimitPolicy.FailCommits);
                }
                break;
            case ReaderLimitPolicy.EndOldestReader:
                // A reader already asked keeps its snapshot until its next call: asking the next oldest would not help.
                if (over && !reader.EndRequested && ReaderTable.RequestEnd(reader))
                {
                    Interlocked.Increment(ref _readersEnded);
                    Notify(reader, pressure.PinnedBytes, limitReached: true, ReaderLimitPolicy.EndOldestReader);
                }
                break;
        }
    }

    /// <summary>Called by a commit before it writes anything: throws while <see cref="ReaderLimitPolicy.FailCommits"/> refuses commits.</summary>
    public void ThrowIfCommitsRefused()
    {
        if (!_refusingCommits) return;
        // The reader may have ended since the flusher looked.
        var pressure = Measure();
        if (pressure.Reader is not { } reader || !IsOverLimit(reader.Age, pressure.PinnedBytes))
        {
            _refusingCommits = false;
            return;
        }
        Interlocked.Increment(ref _commitsRefused);
        throw new StorageException(StorageErrorCode.ReaderLimitExceeded,
            $"The commit was refused and nothing was written: the oldest read transaction (snapshot {reader.TransactionId}) has been open for {reader.Age.TotalSeconds:N1} s " +
            $"and open snapshots pin {pressure.PinnedBytes:N0} bytes of scratch, past the reader limit ({Describe(options.ReaderLimitAge)}, {options.ReaderLimitPinnedBytes:N0} bytes). " +
            $"End that reader, then retry.{TransactionOrigin.Describe(reader.BeganAt)}");
    }

    private static string Describe(TimeSpan limit) => limit == Timeout.InfiniteTimeSpan ? "no age limit" : $"{limit.TotalSeconds:N1} s";

    /// <summary>Counts a transaction found collected without having been disposed and tells the options' callback (on the finalizer thread).</summary>
    public void RecordLeak(in LeakedTransaction leak)
    {
        Interlocked.Increment(ref _leaked);
        try
        {
            options.OnTransactionLeaked?.Invoke(leak);
        }
        catch (Exception)
        {
            // An exception escaping a finalizer ends the process; a failing observer must not.
        }
    }

    private bool IsOverLimit(TimeSpan age, long pinnedBytes) =>
        options.ReaderLimitPolicy != ReaderLimitPolicy.None && (Reached(age, options.ReaderLimitAge) || pinnedBytes >= options.ReaderLimitPinnedBytes);

    private static bool Reached(TimeSpan age, TimeSpan threshold) => threshold != Timeout.InfiniteTimeSpan && age >= threshold;

    private static bool IsSameReader(ReaderTable.ReaderInfo? seen, in ReaderTable.ReaderInfo reader) =>
        seen is { } s && ReferenceEquals(s.Slot, reader.Slot) && s.Generation == reader.Generation;

    private void Notify(in ReaderTable.ReaderInfo reader, long pinnedBytes, bool limitReached, ReaderLimitPolicy policy)
    {
        Interlocked.Increment(ref _warnings);
        var callback = options.OnReaderWarning;
        if (callback is null) return;
        try
        {
            callback(new ReaderWarning
            {
                TransactionId = reader.TransactionId,
                Age = reader.Age,
                PinnedBytes = pinnedBytes,
                LimitReached = limitReached,
                Policy = policy,
                BeganAt = reader.BeganAt?.ToString(),
            });
        }
        catch (Exception)
        {
            // A failing observer must not stop the flusher.
        }
    }
}

/// <summary>One measurement: the oldest reader (null when none is open) and the scratch bytes open snapshots pin.</summary>
internal sealed record ReaderPressure(ReaderTable.ReaderInfo? Reader, long PinnedBytes, long Timestamp);
