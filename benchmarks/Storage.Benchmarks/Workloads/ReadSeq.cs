using System.Diagnostics;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W4 readseq: after W1, one cursor scan over all entries in key order, copying each value out, with the engine's
/// files in the page cache. The device bytes read are counted around the scan alone. A second scan of the same snapshot follows, reported as a detail: the
/// first is an engine's first pass over pages it just opened (Storage verifies each page's checksum then, and every
/// engine maps or reads its pages in), the second shows the scan itself.
/// </summary>
internal sealed class ReadSeq : IWorkload
{
    public string Id => "W4";

    public string Name => "readseq";

    public IReadOnlyList<WorkloadRow> Rows { get; } = [new("W4", "W4 readseq", "entries/s")];

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        var directory = ReadRandom.FilledDirectory(engine, context, Id);
        // The files in the page cache, so that the first scan measures the engine and its map, not the device.
        PageCache.LoadDirectory(directory);
        using var instance = engine.Open(directory);
        using var reader = instance.BeginRead();
        var before = DeviceIo.Snapshot();
        var clock = Stopwatch.StartNew();
        var entries = reader.Scan();
        var seconds = clock.Elapsed.TotalSeconds;
        var device = DeviceIo.Snapshot().Since(before);
        clock.Restart();
        var again = reader.Scan();
        var secondSeconds = clock.Elapsed.TotalSeconds;
        if (entries != context.Counts.FilledKeys || again != entries)
        {
            throw new WorkloadCheckException($"The scan found {entries:N0} entries; W1 wrote {context.Counts.FilledKeys:N0}.");
        }
        return
        [
            new RowResult(Id, entries / seconds,
            [
                new("seconds", Format.Seconds(seconds)),
                new("entries", Format.Count(entries)),
                new("entries/s", Format.Rate(entries / seconds)),
                device.ReadFigure,
                new("second scan of the snapshot, entries/s", Format.Rate(again / secondSeconds)),
            ]),
        ];
    }
}
