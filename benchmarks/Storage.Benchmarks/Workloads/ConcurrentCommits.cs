using System.Diagnostics;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W6 concurrent-commits: 16 committers, each 2,000 transactions of 1 random put, every commit durable, on one fresh
/// environment per variant. W6: 16 threads, each with a writer of its own (concurrent durable commits share journal
/// writes where the engine groups them). W6-async: 16 asynchronous loops through the engine's asynchronous commit,
/// no thread per waiting commit. W6-merged: 16 threads, each put submitted as its own operation to the engine's
/// merging write API. The clock runs from the common start to the engine's close.
/// </summary>
internal sealed class ConcurrentCommits : IWorkload
{
    private const int Committers = 16;
    private const string AsyncKey = "W6-async";
    private const string MergedKey = "W6-merged";

    public string Id => "W6";

    public string Name => "concurrent-commits";

    public IReadOnlyList<WorkloadRow> Rows { get; } =
    [
        new("W6", "W6 concurrent-commits, 16 threads", "commits/s"),
        new(AsyncKey, "W6-async, 16 asynchronous committers", "commits/s"),
        new(MergedKey, "W6-merged, 16 threads through the merging write API", "commits/s"),
    ];

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        var perCommitter = context.Counts.Transactions / 5; // 2,000 (200 with --quick)
        var rows = new List<RowResult> { RunThreads(engine, context, "W6", perCommitter, merged: false) };
        rows.Add(engine is StorageEngine ? RunAsync(engine, context, perCommitter) : RowResult.Note(AsyncKey, "n/a: no asynchronous commit"));
        rows.Add(engine is StorageEngine ? RunThreads(engine, context, MergedKey, perCommitter, merged: true) : RowResult.Note(MergedKey, "n/a: no merging write API"));
        return rows;
    }

    private RowResult RunThreads(IEngine engine, RunContext context, string key, int perThread, bool merged)
    {
        var directory = context.FreshDirectory(engine, Id);
        var instance = engine.Open(directory);
        var before = default(DeviceIo);
        ThreadGroup group;
        try
        {
            group = ThreadGroup.Run(Committers, t => $"{key}-{t}", t =>
            {
                var keys = new RandomKeySource();
                keys.Skip((long)t * perThread);
                var values = new ValueSource();
                var batch = new KeyValueBatch(1);
                if (merged)
                {
                    var merging = (IMergingEngineInstance)instance;
                    return new ThreadWork(() =>
                    {
                        for (var i = 0; i < perThread; i++)
                        {
                            batch.Fill(keys, values, 1);
                            merging.CommitMerged(batch);
                        }
                    }, () => { });
                }
                // Last, so that nothing between its creation and the ready signal can fail and leave it open.
                var writer = instance.CreateWriter();
                return new ThreadWork(() =>
                {
                    for (var i = 0; i < perThread; i++)
                    {
                        batch.Fill(keys, values, 1);
                        writer.Commit(batch);
                    }
                }, writer.Dispose);
            }, atStart: () => before = DeviceIo.Snapshot());
        }
        catch
        {
            instance.Dispose();
            throw;
        }
        return Finish(key, engine, context, directory, instance, group.Start, before, perThread);
    }

    private RowResult RunAsync(IEngine engine, RunContext context, int perCommitter)
    {
        var directory = context.FreshDirectory(engine, Id);
        var instance = engine.Open(directory);
        long start;
        DeviceIo before;
        try
        {
            var committers = Enumerable.Range(0, Committers).Select(c =>
            {
                var keys = new RandomKeySource();
                keys.Skip((long)c * perCommitter);
                return (Keys: keys, Values: new ValueSource(), Batch: new KeyValueBatch(1), Writer: (IAsyncEngineWriter)instance.CreateWriter());
            }).ToArray();
            before = DeviceIo.Snapshot();
            start = Stopwatch.GetTimestamp();
            Task.WhenAll(committers.Select(c => Task.Run(async () =>
            {
                for (var i = 0; i < perCommitter; i++)
                {
                    c.Batch.Fill(c.Keys, c.Values, 1);
                    await c.Writer.CommitAsync(c.Batch).ConfigureAwait(false);
                }
            }))).GetAwaiter().GetResult();
            foreach (var c in committers) c.Writer.Dispose();
        }
        catch
        {
            instance.Dispose();
            throw;
        }
        return Finish(AsyncKey, engine, context, directory, instance, start, before, perCommitter);
    }

    private static RowResult Finish(string key, IEngine engine, RunContext context, string directory, IEngineInstance instance, long start, DeviceIo before, int perCommitter)
    {
        instance.Dispose();
        var ended = Stopwatch.GetTimestamp();
        var device = DeviceIo.Snapshot().Since(before);
        context.Discard(directory);
        var commits = (long)Committers * perCommitter;
        // From the common start to the engine's close: the writers' disposal and the final flush are inside.
        var seconds = Stopwatch.GetElapsedTime(start, ended).TotalSeconds;
        var figures = new List<Figure>
        {
            new("seconds", Format.Seconds(seconds)),
            new("commits", Format.Count(commits)),
            new("commits/s", Format.Rate(commits / seconds)),
        };
        figures.AddRange(device.Figures);
        figures.AddRange(instance.Counters());
        return new RowResult(key, commits / seconds, figures);
    }
}
