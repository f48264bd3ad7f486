using Storage.Benchmarks;
using Storage.Benchmarks.Micro;

// --bdn: BenchmarkDotNet micro-benchmarks; --flush: the flush benchmark (backends side by side); --held-reader-probe: where a
// held reader's scratch lives (memory, scratch file) as it grows; otherwise (or with --workloads) the workload comparison.
if (args.Contains("--bdn"))
{
    return MicroBenchmarks.Run(args.Where(arg => arg != "--bdn").ToArray());
}

if (args.Contains("--flush"))
{
    return Storage.Benchmarks.Flush.FlushBenchmark.Run(args, Console.Out);
}

if (args.Contains("--held-reader-probe"))
{
    return Storage.Benchmarks.Memory.HeldReaderProbe.Run(args, Console.Out);
}

var options = RunnerOptions.Parse(args, out var error);
if (options is null)
{
    if (string.IsNullOrEmpty(error))
    {
        Console.WriteLine(RunnerOptions.Usage);
        return 0;
    }
    Console.Error.WriteLine(error);
    Console.Error.WriteLine(RunnerOptions.Usage);
    return 2;
}
var runner = new WorkloadRunner(options, Console.Out);
var exitCode = runner.Run();
// An abandoned engine thread (a hang) may be a foreground thread of the engine's own: do not wait for it.
if (runner.LeftThreadsRunning) Environment.Exit(exitCode);
return exitCode;
