namespace Storage.Benchmarks.Workloads;

/// <summary>
/// The workloads of WORKLOADS.md, in run order (W3, W4 and W9 read what W1 wrote; W1-held-reader compares
/// itself with W1, so it follows it).
/// </summary>
internal static class WorkloadCatalog
{
    public static IReadOnlyList<IWorkload> All { get; } =
    [
        new FillRandomDurable(),
        new FillRandomHeldReader(),
        new FillRandomLazy(),
        new FillRandomPipelined(),
        new FillSeqDurable(),
        new ReadRandom(),
        new ReadSeq(),
        new FillRandBatchDurable(),
        new ConcurrentCommits(),
        new GroupJournals(),
        new SeeksOverTime(),
        new ColdMultiget(),
        new ColdMultigetLarge(),
        new Churn(),
        new HotBackup(),
    ];

    public static IWorkload? Find(string id) =>
        All.FirstOrDefault(workload => string.Equals(workload.Id, id, StringComparison.OrdinalIgnoreCase));
}
