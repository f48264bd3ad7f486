namespace Storage.Benchmarks.Workloads;

/// <summary>An engine gave a wrong answer during a workload (a written key missing, a value of the wrong size).</summary>
internal sealed class WorkloadCheckException(string message) : Exception(message);
