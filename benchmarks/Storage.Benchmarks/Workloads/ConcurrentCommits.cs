using System.Diagnostics;
using System.Runtime.ExceptionServices;
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
        var failures = new Exception?[Threads];
        long? writtenBefore;
        var clock = new Stopwatch();
        try
        {
            using var ready = new CountdownEvent(Threads);
            using var go = new ManualResetEventSlim();
            var workers = Enumerable.Range(0, Threads).Select(t => new Thread(() =>
            {
                IEngineWriter? writer = null;
                try
                {
                    writer = instance.CreateWriter();
                    var keys = new RandomKeySource();
                    keys.Skip((long)t * perThread);
                    var values = new ValueSource();
                    var batch = new KeyValueBatch(1);
                    ready.Signal();
                    go.Wait();
                    for (var i = 0; i < perThread; i++)
                    {
                        batch.Fill(keys, values, 1);
                        writer.WriteDurable(batch);
                    }
                }
                catch (Exception e)
                {
                    failures[t] = e;
                    if (writer is null) ready.Signal();
                }
                finally
                {
                    writer?.Dispose();
                }
            }) { IsBackground = true, Name = $"W6-{t}" }).ToList();
            workers.ForEach(worker => worker.Start());
            ready.Wait();
            writtenBefore = DeviceIo.WriteBytes();
            clock.Start();
            go.Set();
            workers.ForEach(worker => worker.Join());
        }
        catch
        {
            instance.Dispose();
            throw;
        }
        instance.Dispose();
        clock.Stop();
        var writtenAfter = DeviceIo.WriteBytes();
        if (failures.FirstOrDefault(failure => failure is not null) is { } failure) ExceptionDispatchInfo.Capture(failure).Throw();
        context.Discard(directory);
        var commits = (long)Threads * perThread;
        var seconds = clock.Elapsed.TotalSeconds;
        var figures = new List<Figure>
        {
            new("seconds", Format.Seconds(seconds)),
            new("commits", Format.Count(commits)),
            new("commits/s", Format.Rate(commits / seconds)),
            new("device bytes written", Format.Bytes(writtenAfter - writtenBefore)),
        };
        figures.AddRange(instance.Counters());
        return [new RowResult(Id, commits / seconds, figures)];
    }
}
