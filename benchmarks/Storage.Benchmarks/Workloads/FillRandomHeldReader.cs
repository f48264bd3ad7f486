using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W1-held-reader: W1 with one idle read transaction begun before the fill and held across its first 80%
/// of commits (8,000 of 10,000; 800 with --quick), then ended while the fill goes on. What a forgotten or
/// very long reader costs the writer: throughput against plain W1 in the same run, and the process's peak
/// resident memory.
/// </summary>
internal sealed class FillRandomHeldReader() : FillDurableWorkload("W1-held-reader", "fillrandom-durable, a reader held across 80% of the commits")
{
    protected override int HeldReaderCommits(WorkloadCounts counts) => counts.Transactions / 5 * 4;

    protected override IKeySource CreateKeySource() => new RandomKeySource();

    protected override void Filled(IEngine engine, string directory, RunContext context) => context.Discard(directory);

    protected override IEnumerable<Figure> Compared(IEngine engine, RunContext context, double rate)
    {
        var plain = context.Rate(engine, "W1");
        yield return new("tx/s / W1's tx/s (same run)", plain is { } w1 && w1 > 0 ? Format.Ratio(rate / w1) : "n/a: W1 not run");
    }
}
