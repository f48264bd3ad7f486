using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// A small unmeasured fill and read per engine before the workloads, so that the first measured workload
/// does not pay for JIT compilation of the engine's managed code (or of its binding).
/// </summary>
internal static class WarmUp
{
    private const int Transactions = 50;
    private const int Gets = 20_000;

    public static void Run(IEngine engine, RunContext context)
    {
        var counts = new WorkloadCounts(Transactions, context.Counts.PutsPerTransaction, Gets);
        var directory = context.FreshDirectory(engine, "warmup");
        FillDurableWorkload.Fill(engine, directory, counts, new RandomKeySource(), out _);
        using (var instance = engine.Open(directory))
        using (var reader = instance.BeginRead())
        {
            var keys = new RandomKeySource(wrapAfterKeys: counts.FilledKeys);
            Span<byte> key = stackalloc byte[KeyFormat.KeySizeBytes];
            for (var i = 0; i < Gets; i++)
            {
                keys.Next(key);
                if (!reader.TryGet(key, out _)) throw new WorkloadCheckException("A key written during warm-up was not found.");
            }
            reader.Scan();
        }
        context.Discard(directory);
    }
}
