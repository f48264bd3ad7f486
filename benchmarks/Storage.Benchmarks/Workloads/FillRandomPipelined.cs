using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W1-pipelined: W1's 10,000 durable transactions from one thread that begins the next transaction as soon as the
/// commit before it is handed to the journal, keeping up to <see cref="Depth"/> commits in flight and counting the fill
/// once the last is durable (storage's <c>CommitAsync</c>). An engine without such a commit runs W1 as it is.
/// </summary>
internal sealed class FillRandomPipelined() : FillDurableWorkload("W1-pipelined", "fillrandom-durable, one thread, commits pipelined")
{
    /// <summary>Commits in flight at most.</summary>
    public const int Depth = 8;

    protected override int PipelineDepth => Depth;

    protected override IKeySource CreateKeySource() => new RandomKeySource();

    protected override void Filled(IEngine engine, string directory, RunContext context) => context.Discard(directory);

    protected override IEnumerable<Figure> Compared(IEngine engine, RunContext context, double rate)
    {
        var durable = context.Rate(engine, "W1");
        yield return new("tx/s / W1's tx/s (same run)", durable is { } w1 && w1 > 0 ? Format.Ratio(rate / w1) : "n/a: W1 not run");
    }
}
