namespace Storage.Benchmarks.Reporting;

/// <summary>One engine's result for one row: the throughput the table compares and the detail figures.</summary>
internal sealed record RowResult(string RowKey, double Throughput, IReadOnlyList<Figure> Figures);
