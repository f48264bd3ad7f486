using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Workloads;

/// <summary>W5 fillrandbatch-durable: 1,000 transactions x 1,000 random puts, every commit durable.</summary>
internal sealed class FillRandBatchDurable() : FillDurableWorkload("W5", "fillrandbatch-durable")
{
    protected override WorkloadCounts CountsFor(WorkloadCounts run) =>
        new(run.Transactions / 10, run.PutsPerTransaction * 10, run.GetsPerThread);

    protected override IKeySource CreateKeySource() => new RandomKeySource();

    protected override void Filled(IEngine engine, string directory, RunContext context) => context.Discard(directory);
}
