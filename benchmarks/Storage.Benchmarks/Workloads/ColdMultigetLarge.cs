using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W9 on a file larger than memory: a fill four times W1's keys (transactions of 10,000 puts, not measured), then
/// W9's two cold passes (10,000 random existing keys one by one, then batched) with the process in a memory cgroup
/// a fraction of the data's size, so that the page cache cannot hold the file and whatever the kernel or the engine
/// reads beyond the pages a lookup needs evicts pages it needed before: the figures are about seeks and bytes read,
/// not about how much of the file a read-ahead window brought in. Needs root and the cgroup v1 memory controller.
/// </summary>
internal sealed class ColdMultigetLarge : IWorkload
{
    private const string SingleKey = "W9-large/single";
    private const string BatchedKey = "W9-large/batched";
    private const int PutsPerTransaction = 10_000;

    public string Id => "W9-large";

    public string Name => "cold-multiget, larger than memory";

    public IReadOnlyList<WorkloadRow> Rows { get; } =
    [
        new(SingleKey, "W9 larger than memory, one by one", "gets/s"),
        new(BatchedKey, "W9 larger than memory, batched", "gets/s"),
    ];

    /// <summary>Keys filled: 4,000,000 (about 700 MB in a B+Tree) in a full run, 1,000,000 with <c>--quick</c>.</summary>
    public static long Entries(WorkloadCounts counts) => counts == WorkloadCounts.Quick ? 1_000_000 : 4 * counts.FilledKeys;

    /// <summary>The cgroup's limit: 128 MiB in a full run (a fifth of the data or less), 64 MiB with <c>--quick</c>.</summary>
    public static long LimitBytes(WorkloadCounts counts) => counts == WorkloadCounts.Quick ? 64L << 20 : 128L << 20;

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        if (MemoryLimit.UnavailableReason() is { } reason)
        {
            return [RowResult.Note(SingleKey, $"n/a: the memory limit {reason}"), RowResult.Note(BatchedKey, $"n/a: the memory limit {reason}")];
        }
        var entries = Entries(context.Counts);
        var directory = context.FreshDirectory(engine, Id);
        var fill = new WorkloadCounts((int)(entries / PutsPerTransaction), PutsPerTransaction, GetsPerThread: 0);
        var filled = FillDurableWorkload.Fill(engine, directory, fill, new RandomKeySource(), out _);
        var keys = ColdMultiget.Keys(entries, skip: entries / 3, context.Counts.Transactions);
        var limit = LimitBytes(context.Counts);
        var single = ColdMultiget.OneByOne(engine, directory, keys, SingleKey, limit);
        var batched = ColdMultiget.Batched(engine, directory, keys, BatchedKey, limit);
        context.Discard(directory);
        // The fill's size figures say how much larger than the limit the data is.
        var sizes = filled.Where(figure => figure.Label is "data file size" or "directory size").ToList();
        return
        [
            single with { Figures = [.. single.Figures, .. sizes] },
            batched with { Figures = [.. batched.Figures, .. sizes] },
        ];
    }
}
