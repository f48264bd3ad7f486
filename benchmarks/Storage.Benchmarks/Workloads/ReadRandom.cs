using System.Diagnostics;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W3 readrandom: after W1, 1,000,000 gets of random existing keys on 1 thread, then on 2 threads with
/// 1,000,000 gets each. The keys replay W1's generator, restarting it after the keys W1 wrote; the second
/// thread starts half-way through that sequence so the two threads do not read in lockstep. The engine's files are
/// read into the page cache first, so the gets are warm whatever ran before. The device bytes read are counted
/// from the common start until every reader has ended.
/// </summary>
internal sealed class ReadRandom : IWorkload
{
    private const string OneThreadKey = "W3/1";
    private const string TwoThreadsKey = "W3/2";

    public string Id => "W3";

    public string Name => "readrandom";

    public IReadOnlyList<WorkloadRow> Rows { get; } =
    [
        new(OneThreadKey, "W3 readrandom, 1 thread", "gets/s"),
        new(TwoThreadsKey, "W3 readrandom, 2 threads", "gets/s"),
    ];

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        var directory = FilledDirectory(engine, context, Id);
        // Warm reads: the fills that ran since W1 (other engines', tens of GiB through the page cache) may have evicted it.
        PageCache.LoadDirectory(directory);
        using var instance = engine.Open(directory);
        return
        [
            Measure(instance, OneThreadKey, threads: 1, context.Counts),
            Measure(instance, TwoThreadsKey, threads: 2, context.Counts),
        ];
    }

    /// <summary>W1's directory for the engine; filled as W1 does (not reported) when W1 was not selected.</summary>
    public static string FilledDirectory(IEngine engine, RunContext context, string workloadId)
    {
        if (context.FilledDirectory(engine) is { } filled) return filled;
        if (context.FillFailed(engine)) throw new WorkloadSkippedException("W1 failed");
        context.Progress.WriteLine($"  [{workloadId} {engine.Name}] W1 was not selected: filling as W1 does first (not reported)");
        var directory = context.FreshDirectory(engine, $"W1-for-{workloadId}");
        FillDurableWorkload.Fill(engine, directory, context.Counts, new RandomKeySource(), out _);
        context.RecordFilled(engine, directory);
        return directory;
    }

    private static RowResult Measure(IEngineInstance instance, string rowKey, int threads, WorkloadCounts counts)
    {
        var readers = new Reader[threads];
        for (var i = 0; i < threads; i++)
        {
            readers[i] = new Reader(instance, counts, startAtKey: i * counts.FilledKeys / threads);
        }
        var before = default(DeviceIo);
        var group = ThreadGroup.Run(threads, _ => "readrandom", i => readers[i].Prepare(), atStart: () => before = DeviceIo.Snapshot());
        var device = DeviceIo.Snapshot().Since(before);

        var misses = readers.Sum(reader => reader.Misses);
        var wrongSizes = readers.Sum(reader => reader.WrongSizes);
        if (misses > 0 || wrongSizes > 0)
        {
            throw new WorkloadCheckException($"{misses:N0} written keys were not found and {wrongSizes:N0} values were not {ValueSource.ValueSizeBytes} bytes, out of {(long)threads * counts.GetsPerThread:N0} gets.");
        }

        // Wall time from the first thread's start to the last thread's end.
        var seconds = Stopwatch.GetElapsedTime(group.FirstStarted, group.LastEnded).TotalSeconds;
        var gets = (long)threads * counts.GetsPerThread;
        var figures = new List<Figure>
        {
            new("seconds", Format.Seconds(seconds)),
            new("gets", Format.Count(gets)),
            new("gets/s", Format.Rate(gets / seconds)),
            device.ReadFigure,
        };
        return new RowResult(rowKey, gets / seconds, figures);
    }

    /// <summary>One reader thread's state; the engine reader is begun and disposed on that thread.</summary>
    private sealed class Reader(IEngineInstance instance, WorkloadCounts counts, long startAtKey)
    {
        public long Misses { get; private set; }

        public long WrongSizes { get; private set; }

        /// <summary>Before the common start: the key generator in place and the engine reader begun.</summary>
        public ThreadWork Prepare()
        {
            var keys = new RandomKeySource(wrapAfterKeys: counts.FilledKeys);
            keys.Skip(startAtKey);
            var reader = instance.BeginRead();
            return new ThreadWork(() => Read(reader, keys), reader.Dispose);
        }

        private void Read(IEngineReader reader, RandomKeySource keys)
        {
            Span<byte> key = stackalloc byte[KeyFormat.KeySizeBytes];
            long misses = 0;
            long wrongSizes = 0;
            for (var i = 0; i < counts.GetsPerThread; i++)
            {
                keys.Next(key);
                if (!reader.TryGet(key, out var valueLength)) misses++;
                else if (valueLength != ValueSource.ValueSizeBytes) wrongSizes++;
            }
            Misses = misses;
            WrongSizes = wrongSizes;
        }
    }
}
