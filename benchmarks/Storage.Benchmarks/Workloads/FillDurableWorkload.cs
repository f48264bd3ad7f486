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

    /// <summary>Commits one thread keeps in flight through an engine's pipelined commit (W1-pipelined); 0: each commit waited for.</summary>
    protected virtual int PipelineDepth => 0;

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
            figures = Fill(engine, directory, counts, CreateKeySource(), out seconds, holdReaderForCommits: HeldReaderCommits(counts), mode: Mode, pipelineDepth: PipelineDepth);
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
    /// clock starts) and ended after that many commits; the fill goes on without it. With <paramref name="pipelineDepth"/>
    /// above 0 and an engine with a pipelined commit, the next transaction begins as soon as the one before is handed to
    /// the journal, up to that many commits not yet durable; the fill counts when the last is durable.
    /// </summary>
    public static IReadOnlyList<Figure> Fill(IEngine engine, string directory, WorkloadCounts counts, IKeySource keys, out double seconds,
        Action<IEngineInstance>? afterDispose = null, int holdReaderForCommits = 0, CommitMode mode = CommitMode.Durable, int pipelineDepth = 0)
    {
        var batch = new KeyValueBatch(counts.PutsPerTransaction);
        var values = new ValueSource();
        var instance = engine.Open(directory, mode);
        DeviceIo before;
        (int Gen0, int Gen1, int Gen2) collectionsBefore;
        long? rssAtRelease = null;
        var clock = new Stopwatch();
        HeldReader? held = null;
        var peakReset = ProcessMemory.ResetPeak();
        try
        {
            if (holdReaderForCommits > 0) held = HeldReader.Begin(instance);
            before = DeviceIo.Snapshot();
            collectionsBefore = Collections();
            clock.Start();
            if (pipelineDepth > 0 && instance is IPipelinedEngineInstance pipelined)
            {
                CommitPipelined(pipelined, batch, keys, values, counts, pipelineDepth);
            }
            else
            {
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
        var collections = Collections();
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
            new("garbage collections gen0 / gen1 / gen2 (process)",
                $"{collections.Gen0 - collectionsBefore.Gen0} / {collections.Gen1 - collectionsBefore.Gen1} / {collections.Gen2 - collectionsBefore.Gen2}"),
        };
        if (pipelineDepth > 0)
        {
            figures.Add(new("pipelined", instance is IPipelinedEngineInstance
                ? $"yes: up to {pipelineDepth} commits in flight from one thread, each counted once durable"
                : "no: the engine has no commit that returns before it is durable, so this is W1 as it is"));
        }
        if (holdReaderForCommits > 0)
        {
            figures.Add(new("reader held across commits", Format.Count(Math.Min(holdReaderForCommits, counts.Transactions))));
            figures.Add(new("RSS when the reader ended", Format.Bytes(rssAtRelease)));
        }
        figures.AddRange(instance.Counters());
        afterDispose?.Invoke(instance);
        return figures;
    }

    /// <summary>
    /// The fill through <see cref="IPipelinedEngineInstance.CommitPipelined"/>: each transaction is handed to the journal
    /// while up to <paramref name="depth"/> - 1 before it may still be waiting for their durable write; returns once every
    /// one is durable, and throws the first failure.
    /// </summary>
    private static void CommitPipelined(IPipelinedEngineInstance instance, KeyValueBatch batch, IKeySource keys, ValueSource values, WorkloadCounts counts, int depth)
    {
        var inFlight = new Queue<Task>(depth);
        for (var tx = 0; tx < counts.Transactions; tx++)
        {
            if (inFlight.Count == depth) inFlight.Dequeue().GetAwaiter().GetResult();
            batch.Fill(keys, values, counts.PutsPerTransaction);
            var durable = instance.CommitPipelined(batch);
            if (durable.IsCompletedSuccessfully) continue;
            inFlight.Enqueue(durable.AsTask());
        }
        while (inFlight.Count > 0) inFlight.Dequeue().GetAwaiter().GetResult();
    }

    /// <summary>The process's garbage collections so far, by generation (a gen2 collection counts in gen0 and gen1 too).</summary>
    private static (int Gen0, int Gen1, int Gen2) Collections() => (GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2));

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
