using System.Diagnostics;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W9 cold-multiget: after W1, with every file of the engine dropped from the page cache (fsync, then
/// posix_fadvise DONTNEED) and the engine opened again, 10,000 random existing keys read one by one; then
/// the same keys through the batched read API, which this engine does not have yet.
/// </summary>
internal sealed class ColdMultiget : IWorkload
{
    private const string SingleKey = "W9/single";
    private const string BatchedKey = "W9/batched";

    public string Id => "W9";

    public string Name => "cold-multiget";

    public IReadOnlyList<WorkloadRow> Rows { get; } =
    [
        new(SingleKey, "W9 cold-multiget, one by one", "gets/s"),
        new(BatchedKey, "W9 cold-multiget, batched", "gets/s"),
    ];

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        var gets = context.Counts.Transactions; // 10,000 (1,000 with --quick)
        var directory = ReadRandom.FilledDirectory(engine, context, Id);
        var dropped = PageCache.DropDirectory(directory);
        using var instance = engine.Open(directory);
        using var reader = instance.BeginRead();
        // Keys W1 wrote, starting a third of the way into its sequence (not the ones W3 began with).
        var keys = new RandomKeySource(wrapAfterKeys: context.Counts.FilledKeys);
        keys.Skip(context.Counts.FilledKeys / 3);
        Span<byte> key = stackalloc byte[KeyFormat.KeySizeBytes];
        var clock = Stopwatch.StartNew();
        for (var i = 0; i < gets; i++)
        {
            keys.Next(key);
            if (!reader.TryGet(key, out var length) || length != ValueSource.ValueSizeBytes)
            {
                throw new WorkloadCheckException("A key W1 wrote was not found (or its value had the wrong size).");
            }
        }
        var seconds = clock.Elapsed.TotalSeconds;
        var single = new RowResult(SingleKey, gets / seconds,
        [
            new("seconds", Format.Seconds(seconds)),
            new("gets", Format.Count(gets)),
            new("gets/s", Format.Rate(gets / seconds)),
            new("bytes dropped from the page cache", Format.Bytes(dropped)),
        ]);
        var batched = engine is StorageEngine
            ? RowResult.Note(BatchedKey, "not implemented")
            : RowResult.Note(BatchedKey, "n/a: no batched read API");
        return [single, batched];
    }
}
