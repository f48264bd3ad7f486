namespace Storage.Benchmarks.Workloads;

/// <summary>A workload could not run because one it depends on failed; the cell says "skipped".</summary>
internal sealed class WorkloadSkippedException(string reason) : Exception(reason);
