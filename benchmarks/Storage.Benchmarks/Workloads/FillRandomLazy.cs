using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W1-lazy: W1 with commits acknowledged before they are durable (this engine's lazy durability, LMDB
/// <c>MDB_NOSYNC</c>, RocksDB <c>sync=false</c>, SQLite <c>synchronous=NORMAL</c>), then one durable sync at the end:
/// closing the engine is inside the clock.
/// </summary>
internal sealed class FillRandomLazy() : FillDurableWorkload("W1-lazy", "fillrandom-lazy, one sync at the end")
{
    protected override CommitMode Mode => CommitMode.Lazy;

    protected override IKeySource CreateKeySource() => new RandomKeySource();

    protected override void Filled(IEngine engine, string directory, RunContext context) => context.Discard(directory);

    protected override IEnumerable<Figure> Compared(IEngine engine, RunContext context, double rate)
    {
        var durable = context.Rate(engine, "W1");
        yield return new("tx/s / W1's tx/s (same run)", durable is { } w1 && w1 > 0 ? Format.Ratio(rate / w1) : "n/a: W1 not run");
    }
}
