using BenchmarkDotNet.Running;

namespace Storage.Benchmarks.Micro;

/// <summary>Entry point of <c>--bdn</c>: BenchmarkSwitcher over this assembly's benchmark classes.</summary>
internal static class MicroBenchmarks
{
    public static int Run(string[] args)
    {
        var summaries = BenchmarkSwitcher.FromAssembly(typeof(MicroBenchmarks).Assembly).Run(args);
        return summaries.Any(summary => summary.HasCriticalValidationErrors || summary.Reports.Any(report => !report.Success)) ? 1 : 0;
    }
}
