using BenchmarkDotNet.Attributes;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Micro;

/// <summary>
/// W9 cold-multiget, one by one: each invocation reads W9's 10,000 keys with one get each, after the iteration
/// set-up dropped the engine's files from the page cache and opened it again, so only the cold reads are timed
/// (one invocation per iteration; the mean is per pass of 10,000 keys). The directory is filled once per case with
/// W1's first <see cref="FilledKeys"/> keys, as for <see cref="ReadRandomWorkloadBenchmarks"/>. The warm-up
/// iterations stand for W9's unmeasured first pass, which ran faster than later ones just after the fill.
/// Run with: dotnet run -c Release --project benchmarks/Storage.Benchmarks -- --bdn --filter '*ColdMultigetWorkload*' --job short
/// </summary>
public class ColdMultigetWorkloadBenchmarks : ColdMultigetWorkloadBase
{
    [ParamsSource(nameof(Engines))]
    public string Engine { get; set; } = "";

    public static IEnumerable<string> Engines() => WorkloadBenchmarkEngines.Available();

    protected override string EngineName => Engine;

    /// <summary>10,000 cold gets, each value copied out; a missing key or a wrong size fails the case.</summary>
    [Benchmark(Description = "W9 cold-multiget one by one, per 10,000 gets")]
    public int OneByOne()
    {
        var reader = State.Reader();
        var bytes = 0;
        foreach (var key in State.Keys)
        {
            if (!reader.TryGet(key.Span, out var length) || length != ValueSource.ValueSizeBytes)
            {
                throw new InvalidOperationException("A key W1 wrote was not found (or its value had the wrong size).");
            }
            bytes += length;
        }
        return bytes;
    }
}
