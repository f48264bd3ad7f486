using System.Diagnostics;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W1 and W2: transactions of puts on a fresh directory, every commit durable. The clock and the
/// device-bytes counters start after the engine is open and stop after it is disposed, so the final
/// flush and sync are inside both.
/// </summary>
internal abstract class FillDurableWorkload : IWorkload
{
    protected FillDurableWorkload(string id, string name)
    {
        Id = id;
        Name = name;
        Rows = [new WorkloadRow(id, $"{id} {name}", "tx/s")];
    }

    /// <summary>Commits an idle reader, begun before the fill, is held across (0: none).</summary>
    protected virtual int HeldReaderCommits(WorkloadCounts counts) => 0;

    /// <summary>Figures comparing this run with another row of the same run (W1-held-reader against W1).</summary>
    protected virtual IEnumerable<Figure> Compared(IEngine engine, RunContext context, double rate) => [];

    /// <summary>How commits reach the disk (W1-lazy: acknowledged before durable, one sync at the end).</summary>
    protected virtual CommitMode Mode => CommitMode.Durable;

    /// <summary>The transactions and puts this workload runs (W5 has its own).</summary>
    protected virtual WorkloadCounts CountsFor(WorkloadCounts run) => run;

    public string Id { get; }

    public string Name { get; }

    public IReadOnlyList<WorkloadRow> Rows { get; }

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        var directory = context.FreshDirectory(engine, Id);
        var counts = CountsFor(context.Counts);
        IReadOnlyList<Figure> figures;
        double seconds;
        try
        {
            figures = Fill(engine, directory, counts, CreateKeySource(), out seconds, holdReaderForCommits: HeldReaderCommits(counts), mode: Mode);
        }
        catch
        {
            Failed(engine, context);
            throw;
        }
        Filled(engine, directory, context);
        var rate = counts.Transactions / seconds;
        context.RecordRate(engine, Id, rate);
        return [new RowResult(Id, rate, [.. figures, .. Compared(engine, context, rate)])];
    }

    protected abstract IKeySource CreateKeySource();

    /// <summary>What to do with the directory afterwards (W1 keeps it for W3).</summary>
    protected abstract void Filled(IEngine engine, string directory, RunContext context);

    /// <summary>What to remember when the fill threw (W1 tells W3 not to try again).</summary>
    protected virtual void Failed(IEngine engine, RunContext context)
    {
    }

    /// <summary>
    /// Runs the fill and returns its figures; also used by W3 to prepare when W1 was not selected. With
    /// <paramref name="holdReaderForCommits"/> above 0, a read transaction is begun before the fill (and before the
    /// clock starts) and ended after that many commits; the fill goes on without it.
    /// </summary>
    public static IReadOnlyList<Figure> Fill(IEngine engine, string directory, WorkloadCounts counts, IKeySource keys, out double seconds,
        Action<IEngineInstance>? afterDispose = null, int holdReaderForCommits = 0, CommitMode mode = CommitMode.Durable)
    {
        var batch = new KeyValueBatch(counts.PutsPerTransaction);
        var values = new ValueSource();
        var instance = engine.Open(directory, mode);
        DeviceIo before;
        long? rssAtRelease = null;
        var clock = new Stopwatch();
        HeldReader? held = null;
        var peakReset = ProcessMemory.ResetPeak();
        try
        {
            if (holdReaderForCommits > 0) held = HeldReader.Begin(instance);
            before = DeviceIo.Snapshot();
            clock.Start();
            for (var tx = 0; tx < counts.Transactions; tx++)
            {
                batch.Fill(keys, values, counts.PutsPerTransaction);
                instance.Commit(batch);
                if (tx + 1 == holdReaderForCommits)
                {
                    rssAtRelease = ProcessMemory.RssBytes();
                    held!.Release();
                }
            }
        }
        catch
        {
            held?.Dispose();
            DisposeAfterFailure(instance);
            throw;
        }
        held?.Dispose();
        instance.Dispose();
        clock.Stop();
        var device = DeviceIo.Snapshot().Since(before);
        var peakRss = peakReset ? ProcessMemory.PeakRssBytes() : null;

        seconds = clock.Elapsed.TotalSeconds;
        var figures = new List<Figure>
        {
            new("seconds", Format.Seconds(seconds)),
            new("tx/s", Format.Rate(counts.Transactions / seconds)),
            new("puts/s", Format.Rate(counts.FilledKeys / seconds)),
            device.WrittenFigure,
            new("device bytes written / tx", device.WriteBytes is { } written ? Format.Count(written / counts.Transactions) : "n/a"),
            device.ReadFigure,
            new("data file size", Format.Bytes(engine.DataFileBytes(directory))),
            new("directory size", Format.Bytes(FileSizes.OfDirectory(directory))),
            new("peak RSS (process)", Format.Bytes(peakRss)),
        };
        if (holdReaderForCommits > 0)
        {
            figures.Add(new("reader held across commits", Format.Count(Math.Min(holdReaderForCommits, counts.Transactions))));
            figures.Add(new("RSS when the reader ended", Format.Bytes(rssAtRelease)));
        }
        figures.AddRange(instance.Counters());
        afterDispose?.Invoke(instance);
        return figures;
    }

    private static void DisposeAfterFailure(IEngineInstance instance)
    {
        try
        {
            instance.Dispose();
        }
        catch (Exception)
        {
            // The workload's own exception is the one to report; a failed engine may fail to close too.
        }
    }
}
