using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Workloads;

/// <summary>W1 fillrandom-durable: 10,000 transactions x 100 puts of random keys.</summary>
internal sealed class FillRandomDurable() : FillDurableWorkload("W1", "fillrandom-durable")
{
    protected override IKeySource CreateKeySource() => new RandomKeySource();

    protected override void Filled(IEngine engine, string directory, RunContext context) =>
        context.RecordFilled(engine, directory);

    protected override void Failed(IEngine engine, RunContext context) => context.RecordFillFailed(engine);
}
