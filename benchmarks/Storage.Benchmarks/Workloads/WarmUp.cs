using System.Diagnostics;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// An unmeasured fill and read per engine before the workloads, so that measured workloads do not pay for JIT
/// compilation of the engine's managed code (or of its binding). The reads (gets, a scan, and a batched get where
/// the engine has one) repeat for at least
/// <see cref="ReadTime"/>: .NET runs new code unoptimised at first and recompiles what is called often only after
/// about 100 ms without new compilations, and a 1,000,000-entry scan is over in well under that.
/// </summary>
internal static class WarmUp
{
    private const int Transactions = 50;
    private const int Gets = 20_000;
    private static readonly TimeSpan ReadTime = TimeSpan.FromMilliseconds(750);

    public static void Run(IEngine engine, RunContext context)
    {
        var counts = new WorkloadCounts(Transactions, context.Counts.PutsPerTransaction, Gets);
        var directory = context.FreshDirectory(engine, "warmup");
        FillDurableWorkload.Fill(engine, directory, counts, new RandomKeySource(), out _);
        var batch = ColdMultiget.Keys(counts.FilledKeys, skip: 0, Gets / 10);
        using (var instance = engine.Open(directory))
        {
            var clock = Stopwatch.StartNew();
            do
            {
                ReadRound(instance, counts, batch);
            }
            while (clock.Elapsed < ReadTime);
        }
        context.Discard(directory);
    }

    private static void ReadRound(IEngineInstance instance, WorkloadCounts counts, ReadOnlyMemory<byte>[] batch)
    {
        using var reader = instance.BeginRead();
        var keys = new RandomKeySource(wrapAfterKeys: counts.FilledKeys);
        Span<byte> key = stackalloc byte[KeyFormat.KeySizeBytes];
        for (var i = 0; i < Gets; i++)
        {
            keys.Next(key);
            if (!reader.TryGet(key, out _)) throw new WorkloadCheckException("A key written during warm-up was not found.");
        }
        if (reader.Scan() != counts.FilledKeys) throw new WorkloadCheckException("The warm-up scan did not find every key written.");
        if (reader is IBatchedEngineReader batched)
        {
            if (batched.GetMany(batch, ValueSource.ValueSizeBytes, out _) != batch.Length)
            {
                throw new WorkloadCheckException("The warm-up batch did not find every key written.");
            }
        }
    }
}
