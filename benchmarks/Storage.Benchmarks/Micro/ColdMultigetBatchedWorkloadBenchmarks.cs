using BenchmarkDotNet.Attributes;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Micro;

/// <summary>
/// W9 cold-multiget, batched: as <see cref="ColdMultigetWorkloadBenchmarks"/> with the 10,000 keys read in one
/// call of the batched read API. Its own class because only engines whose reader has that API are listed.
/// Run with: dotnet run -c Release --project benchmarks/Storage.Benchmarks -- --bdn --filter '*ColdMultigetBatchedWorkload*' --job short
/// </summary>
public class ColdMultigetBatchedWorkloadBenchmarks : ColdMultigetWorkloadBase
{
    [ParamsSource(nameof(Engines))]
    public string Engine { get; set; } = "";

    public static IEnumerable<string> Engines() => WorkloadBenchmarkEngines.WithBatchedReader();

    protected override string EngineName => Engine;

    /// <summary>10,000 cold gets in one batch, each value copied out; a missing key or a wrong size fails the case.</summary>
    [Benchmark(Description = "W9 cold-multiget batched, per 10,000 gets")]
    public int Batched()
    {
        var reader = (IBatchedEngineReader)State.Reader();
        var keys = State.Keys;
        var found = reader.GetMany(keys, ValueSource.ValueSizeBytes, out var wrongSizes);
        if (found != keys.Length || wrongSizes > 0)
        {
            throw new InvalidOperationException($"The batch found {found} of {keys.Length} keys W1 wrote, {wrongSizes} with a value of the wrong size.");
        }
        return found;
    }
}
