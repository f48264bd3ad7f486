using System.Diagnostics;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W6 concurrent-commits: 16 threads, each 2,000 transactions of 1 random put, every commit durable, on one
/// fresh environment. Each thread has a writer of its own; the clock runs from the common start to the
/// engine's close. Commits are not merged (there is no group commit yet): each one is its own durable write.
/// </summary>
internal sealed class ConcurrentCommits : IWorkload
{
    private const int Threads = 16;

    public string Id => "W6";

    public string Name => "concurrent-commits";

    public IReadOnlyList<WorkloadRow> Rows { get; } = [new("W6", "W6 concurrent-commits, 16 threads", "commits/s")];

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        var perThread = context.Counts.Transactions / 5; // 2,000 (200 with --quick)
        var directory = context.FreshDirectory(engine, Id);
        var instance = engine.Open(directory);
        var before = default(DeviceIo);
        ThreadGroup group;
        try
        {
            group = ThreadGroup.Run(Threads, t => $"W6-{t}", t =>
            {
                var keys = new RandomKeySource();
                keys.Skip((long)t * perThread);
                var values = new ValueSource();
                var batch = new KeyValueBatch(1);
                // Last, so that nothing between its creation and the ready signal can fail and leave it open.
                var writer = instance.CreateWriter();
                return new ThreadWork(() =>
                {
                    for (var i = 0; i < perThread; i++)
                    {
                        batch.Fill(keys, values, 1);
                        writer.WriteDurable(batch);
                    }
                }, writer.Dispose);
            }, atStart: () => before = DeviceIo.Snapshot());
        }
        catch
        {
            instance.Dispose();
            throw;
        }
        instance.Dispose();
        var ended = Stopwatch.GetTimestamp();
        var device = DeviceIo.Snapshot().Since(before);
        context.Discard(directory);
        var commits = (long)Threads * perThread;
        // From the common start to the engine's close: the writers' disposal and the final flush are inside.
        var seconds = Stopwatch.GetElapsedTime(group.Start, ended).TotalSeconds;
        var figures = new List<Figure>
        {
            new("seconds", Format.Seconds(seconds)),
            new("commits", Format.Count(commits)),
            new("commits/s", Format.Rate(commits / seconds)),
        };
        figures.AddRange(device.Figures);
        figures.AddRange(instance.Counters());
        return [new RowResult(Id, commits / seconds, figures)];
    }
}
