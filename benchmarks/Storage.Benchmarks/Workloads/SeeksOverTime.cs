using System.Globalization;
using System.Text;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W8 seeks-over-time: W1 on this engine, printing every flush to the data file (pages written, runs
/// (one seek each), bytes, and the page kinds) the way seed 003's table does: the first, middle and last
/// rows in the table cell's detail, the whole table as a report section. The other engines have no
/// flushes of their own to show.
/// </summary>
internal sealed class SeeksOverTime : IWorkload
{
    private const int RowsPerGroup = 3;

    public string Id => "W8";

    public string Name => "seeks-over-time";

    public IReadOnlyList<WorkloadRow> Rows { get; } = [new("W8", "W8 seeks-over-time (W1's flushes)", "flushes")];

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        if (engine is not StorageEngine) return [RowResult.Note(Id, "n/a: no flush log")];
        var directory = context.FreshDirectory(engine, Id);
        IReadOnlyList<FlushStats> log = [];
        var figures = FillDurableWorkload.Fill(engine, directory, context.Counts, new RandomKeySource(), out _,
            instance => log = ((StorageEngineInstance)instance).FlushLog);
        context.Discard(directory);

        var lines = Lines(log);
        context.AddSection("W8 seeks-over-time: every flush of W1 on storage", lines.Count == 0
            ? "No flushes."
            : "```\n" + string.Join('\n', lines) + "\n```");
        var picked = Pick(lines);
        var details = new List<Figure> { new("flushes", Format.Count(log.Count)) };
        details.AddRange(picked.Select(line => new Figure(line.Label, line.Text)));
        details.AddRange(figures);
        var runs = log.Sum(flush => (long)flush.Runs);
        var pages = log.Sum(flush => flush.PagesWritten);
        var summary = log.Count == 0
            ? "no flushes"
            : string.Create(CultureInfo.InvariantCulture, $"{log.Count} flush{(log.Count == 1 ? "" : "es")}, {pages:N0} pages in {runs:N0} runs");
        return [RowResult.Note(Id, summary, details)];
    }

    /// <summary>One line per flush, formatted as seed 003 prints them.</summary>
    private static List<string> Lines(IReadOnlyList<FlushStats> log)
    {
        var numberWidth = log.Count == 0 ? 1 : log.Max(f => f.FlushNumber).ToString("N0", CultureInfo.InvariantCulture).Length;
        var pageWidth = log.Count == 0 ? 1 : log.Max(f => f.PagesWritten).ToString("N0", CultureInfo.InvariantCulture).Length;
        var runWidth = log.Count == 0 ? 1 : log.Max(f => f.Runs).ToString("N0", CultureInfo.InvariantCulture).Length;
        return log.Select(flush =>
        {
            var kib = (flush.BytesWritten / 1024).ToString("N0", CultureInfo.InvariantCulture);
            var text = new StringBuilder();
            text.Append(CultureInfo.InvariantCulture, $"Flush {flush.FlushNumber.ToString("N0", CultureInfo.InvariantCulture).PadLeft(numberWidth)} ");
            text.Append(CultureInfo.InvariantCulture, $"with {flush.PagesWritten.ToString("N0", CultureInfo.InvariantCulture).PadLeft(pageWidth)} pages - ");
            text.Append(CultureInfo.InvariantCulture, $"{kib} kb writes and {flush.Runs.ToString("N0", CultureInfo.InvariantCulture).PadLeft(runWidth)} seeks ");
            text.Append(CultureInfo.InvariantCulture, $"({flush.LeafPages:N0} leaves, {flush.BranchPages:N0} branches, {flush.OverflowPages:N0} overflows)");
            return text.ToString();
        }).ToList();
    }

    /// <summary>The first, middle and last few lines.</summary>
    private static List<(string Label, string Text)> Pick(List<string> lines)
    {
        if (lines.Count <= 3 * RowsPerGroup) return lines.Select((line, i) => ($"flush line {i + 1}", line)).ToList();
        var middle = lines.Count / 2 - RowsPerGroup / 2;
        var indexes = Enumerable.Range(0, RowsPerGroup)
            .Concat(Enumerable.Range(middle, RowsPerGroup))
            .Concat(Enumerable.Range(lines.Count - RowsPerGroup, RowsPerGroup));
        return indexes.Select(i => ($"flush line {i + 1}", lines[i])).ToList();
    }
}
