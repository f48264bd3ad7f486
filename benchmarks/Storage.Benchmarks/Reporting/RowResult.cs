namespace Storage.Benchmarks.Reporting;

/// <summary>One engine's result for one row: the throughput the table compares and the detail figures.</summary>
internal sealed record RowResult(string RowKey, double Throughput, IReadOnlyList<Figure> Figures)
{
    /// <summary>Set instead of a throughput when the cell holds a text ("not implemented", "n/a: ...").</summary>
    public string? Text { get; init; }

    /// <summary>A cell with a text and no throughput (never a made-up number).</summary>
    public static RowResult Note(string rowKey, string text, IReadOnlyList<Figure>? figures = null) =>
        new(rowKey, double.NaN, figures ?? []) { Text = text };
}
