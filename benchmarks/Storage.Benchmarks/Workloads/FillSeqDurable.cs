using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Workloads;

/// <summary>W2 fillseq-durable: as W1 with sequential keys.</summary>
internal sealed class FillSeqDurable() : FillDurableWorkload("W2", "fillseq-durable")
{
    protected override IKeySource CreateKeySource() => new SequentialKeySource();

    protected override void Filled(IEngine engine, string directory, RunContext context) => context.Discard(directory);
}
