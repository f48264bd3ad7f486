namespace Storage.Benchmarks.Reporting;

/// <summary>A row of the comparison table: one figure of one workload, e.g. W3 with 2 threads.</summary>
/// <param name="Key">Unique key of the row.</param>
/// <param name="Label">What the table shows.</param>
/// <param name="Unit">The throughput's unit (higher is better).</param>
internal sealed record WorkloadRow(string Key, string Label, string Unit);
