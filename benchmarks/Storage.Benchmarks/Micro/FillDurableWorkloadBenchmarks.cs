using BenchmarkDotNet.Attributes;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Micro;

/// <summary>
/// W1 fillrandom-durable and W2 fillseq-durable: one invocation is one durable transaction of 100 puts (W1's and
/// W2's keys and values), so the mean is the time per transaction. The engine is opened once per case on a fresh
/// directory and the keys go on from invocation to invocation, so the tree grows from empty over the run (hundreds
/// to a few thousand transactions in a short job, not W1's 10,000); work an engine defers lands in whichever
/// invocations it falls, and the final flush and sync at close, inside W1's clock, are not measured. Compare engines
/// with each other here rather than with the runner's figures.
/// Run with: dotnet run -c Release --project benchmarks/Storage.Benchmarks -- --bdn --filter '*FillDurableWorkload*' --job short
/// </summary>
[MemoryDiagnoser]
public class FillDurableWorkloadBenchmarks
{
    private const int PutsPerTransaction = 100;

    private readonly KeyValueBatch _batch = new(PutsPerTransaction);
    private readonly ValueSource _values = new();
    private readonly RandomKeySource _randomKeys = new();
    private readonly SequentialKeySource _sequentialKeys = new();
    private string? _directory;
    private IEngineInstance? _instance;

    [ParamsSource(nameof(Engines))]
    public string Engine { get; set; } = "";

    public static IEnumerable<string> Engines() => WorkloadBenchmarkEngines.Available();

    [GlobalSetup(Target = nameof(FillRandomDurable))]
    public void SetupRandom() => Open("W1");

    [GlobalSetup(Target = nameof(FillSeqDurable))]
    public void SetupSequential() => Open("W2");

    [GlobalCleanup]
    public void Cleanup()
    {
        _instance?.Dispose();
        _instance = null;
        WorkloadBenchmarkEngines.Delete(_directory);
    }

    /// <summary>W1: 100 random keys in one durable commit.</summary>
    [Benchmark(Description = "W1 fillrandom-durable, per tx")]
    public void FillRandomDurable()
    {
        _batch.Fill(_randomKeys, _values, PutsPerTransaction);
        _instance!.Commit(_batch);
    }

    /// <summary>W2: the next 100 sequential keys in one durable commit.</summary>
    [Benchmark(Description = "W2 fillseq-durable, per tx")]
    public void FillSeqDurable()
    {
        _batch.Fill(_sequentialKeys, _values, PutsPerTransaction);
        _instance!.Commit(_batch);
    }

    private void Open(string workloadId)
    {
        var engine = WorkloadBenchmarkEngines.FindAvailable(Engine);
        _directory = WorkloadBenchmarkEngines.FreshDirectory(workloadId, engine);
        _instance = engine.Open(_directory);
    }
}
