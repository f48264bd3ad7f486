namespace Storage.Benchmarks.Reporting;

/// <summary>
/// What a run found: a throughput or a text (unavailable, error, skipped) for every row and engine,
/// the detail figures of every result, and the full text of every error.
/// </summary>
internal sealed class ResultTable
{
    private readonly Dictionary<(string Row, string Engine), Cell> _cells = [];
    private readonly Dictionary<(string Row, string Engine), IReadOnlyList<Figure>> _details = [];
    private readonly List<ErrorReport> _errors = [];

    public ResultTable(IReadOnlyList<WorkloadRow> rows, IReadOnlyList<string> engines)
    {
        Rows = rows;
        Engines = engines;
    }

    public IReadOnlyList<WorkloadRow> Rows { get; }

    public IReadOnlyList<string> Engines { get; }

    public IReadOnlyList<ErrorReport> Errors => _errors;

    public bool HasErrors => _errors.Count > 0;

    public void Set(string engine, RowResult result)
    {
        _cells[(result.RowKey, engine)] = result.Text is null ? new Cell(result.Throughput, null) : new Cell(null, result.Text);
        _details[(result.RowKey, engine)] = result.Figures;
    }

    public void SetText(string engine, string rowKey, string text) => _cells[(rowKey, engine)] = new Cell(null, text);

    public void AddError(string engine, string workload, string description) => _errors.Add(new ErrorReport(engine, workload, description));

    public bool Has(string rowKey, string engine) => _cells.ContainsKey((rowKey, engine));

    public Cell Get(string rowKey, string engine) =>
        _cells.TryGetValue((rowKey, engine), out var cell) ? cell : new Cell(null, "not run");

    public IReadOnlyList<Figure>? Details(string rowKey, string engine) =>
        _details.TryGetValue((rowKey, engine), out var figures) ? figures : null;

    /// <summary>A throughput, or the text that stands in for it.</summary>
    public readonly record struct Cell(double? Throughput, string? Text);

    /// <summary>An exception as it was thrown, for the report's error section.</summary>
    public sealed record ErrorReport(string Engine, string Workload, string Description);
}
