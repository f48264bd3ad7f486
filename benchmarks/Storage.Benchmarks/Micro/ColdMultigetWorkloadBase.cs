using BenchmarkDotNet.Attributes;

namespace Storage.Benchmarks.Micro;

/// <summary>
/// What W9's two BenchmarkDotNet classes share: the directory filled once per case (<see cref="ColdMultigetSetup"/>),
/// and per iteration the engine opened again after its files were dropped from the page cache, with one invocation
/// per iteration so that only the cold reads are timed.
/// </summary>
[MemoryDiagnoser]
[InvocationCount(1)]
public abstract class ColdMultigetWorkloadBase
{
    private ColdMultigetSetup? _setup;

    [ParamsSource(nameof(FilledKeyCounts))]
    public int FilledKeys { get; set; }

    public static IEnumerable<int> FilledKeyCounts() => WorkloadBenchmarkEngines.FilledKeyCounts();

    /// <summary>The engine of the case (each class lists its own engines).</summary>
    protected abstract string EngineName { get; }

    private protected ColdMultigetSetup State => _setup ?? throw new InvalidOperationException("The global set-up has not run.");

    [GlobalSetup]
    public void Setup() => _setup = new ColdMultigetSetup(EngineName, FilledKeys);

    [GlobalCleanup]
    public void Cleanup() => _setup?.Dispose();

    [IterationSetup]
    public void OpenCold() => State.OpenCold();

    [IterationCleanup]
    public void Close() => State.Close();
}
