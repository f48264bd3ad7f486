namespace Storage.Benchmarks.Workloads;

/// <summary>
/// The counts of WORKLOADS.md. <c>--quick</c> divides the transaction and get counts by 10 and keeps
/// 100 puts per transaction, so each commit is the same size as in the full run.
/// </summary>
internal sealed record WorkloadCounts(int Transactions, int PutsPerTransaction, int GetsPerThread)
{
    public static WorkloadCounts Full { get; } = new(10_000, 100, 1_000_000);

    public static WorkloadCounts Quick { get; } = new(1_000, 100, 100_000);

    /// <summary>Keys written by W1: every one distinct, as xorshift64 repeats no value within its period.</summary>
    public long FilledKeys => (long)Transactions * PutsPerTransaction;
}
