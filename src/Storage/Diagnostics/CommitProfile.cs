using System.Diagnostics;

namespace Storage.Diagnostics;

/// <summary>
/// Where write transactions spend their time, phase by phase, summed since open, and the latency of commits and of
/// journal writes. The committing thread adds to it with the write lock held; <see cref="StorageEnvironment.GetStats()"/>
/// reads it from any thread. A phase costs two clock reads (tens of nanoseconds), against commits of tens of microseconds
/// and more.
/// </summary>
internal sealed class CommitProfile
{
    public long Transactions;
    public long WriteLockWaitTicks;
    public long BodyTicks;
    public long PageCopyTicks;
    public long ChecksumTicks;
    public long DiffTicks;
    public long FinishTicks;
    public long SwitchTicks;
    public long WriteTicks;
    public long PruneLockWaitTicks;
    public long PublishTicks;

    public LatencyHistogram CommitLatency { get; } = new();

    public LatencyHistogram JournalWriteLatency { get; } = new();

    public static long Now() => Stopwatch.GetTimestamp();

    public static void Add(ref long total, long startedTicks, long endedTicks) => Interlocked.Add(ref total, endedTicks - startedTicks);

    /// <summary>Adds one commit's append, phase by phase (the writer's, with the write lock held).</summary>
    public void RecordAppend(in AppendTimings timings)
    {
        Interlocked.Increment(ref Transactions);
        Add(ref BodyTicks, timings.Began, timings.Started);
        // The copies are estimated from a sample, so a few slow samples could make them exceed the body they are part of.
        Interlocked.Add(ref PageCopyTicks, Math.Min(timings.PageCopyTicks, timings.Started - timings.Began));
        Interlocked.Add(ref ChecksumTicks, timings.ChecksumTicks);
        // Changed pages' checksums are worked out with their diffs, and count as diffing.
        Interlocked.Add(ref DiffTicks, timings.Diffed - timings.PagesStarted - timings.ChecksumTicks);
        Add(ref FinishTicks, timings.Diffed, timings.Finished);
        Add(ref SwitchTicks, timings.Finished, timings.Reserved);
        Interlocked.Add(ref PruneLockWaitTicks, timings.PruneLockWaitTicks);
        Add(ref PublishTicks, timings.Reserved, timings.Appended);
    }

    public CommitPhaseTimes Snapshot() => new()
    {
        Transactions = Volatile.Read(ref Transactions),
        WriteLockWait = Time(ref WriteLockWaitTicks),
        TransactionBody = Time(ref BodyTicks),
        PageCopies = Time(ref PageCopyTicks),
        Checksums = Time(ref ChecksumTicks),
        Diffs = Time(ref DiffTicks),
        EntryFinish = Time(ref FinishTicks),
        JournalSwitches = Time(ref SwitchTicks),
        DurableWrites = Time(ref WriteTicks),
        PruneLockWait = Time(ref PruneLockWaitTicks),
        Publish = Time(ref PublishTicks),
    };

    private static TimeSpan Time(ref long ticks) => Stopwatch.GetElapsedTime(0, Volatile.Read(ref ticks));
}
