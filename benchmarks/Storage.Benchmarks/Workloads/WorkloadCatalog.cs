namespace Storage.Benchmarks.Workloads;

/// <summary>The workloads the runner implements so far, in run order (W3 reads what W1 wrote).</summary>
internal static class WorkloadCatalog
{
    public static IReadOnlyList<IWorkload> All { get; } =
    [
        new FillRandomDurable(),
        new FillSeqDurable(),
        new ReadRandom(),
    ];

    public static IWorkload? Find(string id) =>
        All.FirstOrDefault(workload => string.Equals(workload.Id, id, StringComparison.OrdinalIgnoreCase));
}
