using System.Globalization;
using System.Text;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W8 seeks-over-time: W1 on this engine with flushes frequent enough to follow (the scratch budget that triggers a
/// flush cut to <see cref="ScratchBudgetBytes"/>), printing every flush to the data file (pages written, runs (one seek
/// each), bytes, and the page kinds) the way seed 003's table does; a summary by thirds of the flushes (runs per flush,
/// runs per 1,000 pages); and a chart of runs per flush over the run. The other engines have no flushes of their own.
/// </summary>
internal sealed class SeeksOverTime : IWorkload
{
    private const int RowsPerGroup = 3;

    /// <summary>W8's scratch budget: a flush every few dozen W1 transactions instead of W1's two or three in all.</summary>
    public const long ScratchBudgetBytes = 32L << 20;

    public string Id => "W8";

    public string Name => "seeks-over-time";

    /// <summary>The second row's seek cost model: a write worth 256 KiB of transfer, as on a spinning or network disk.</summary>
    public const long SlowDiskGapFillBytes = 256L << 10;

    public IReadOnlyList<WorkloadRow> Rows { get; } =
    [
        new("W8", "W8 seeks-over-time (W1 with frequent flushes)", "tx/s"),
        new("W8-gaps", $"W8 with gaps filled up to {SlowDiskGapFillBytes >> 10} KiB (a slow disk's seek cost)", "tx/s"),
    ];

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        if (engine is not StorageEngine) return [RowResult.Note(Id, "n/a: no flush log"), RowResult.Note("W8-gaps", "n/a: no flush log")];
        return [Run(context, "W8", gapFillBytes: null), Run(context, "W8-gaps", SlowDiskGapFillBytes)];
    }

    private static RowResult Run(RunContext context, string row, long? gapFillBytes)
    {
        var frequent = new StorageEngine(options => options with
        {
            ScratchBudgetBytes = ScratchBudgetBytes,
            FlushGapFillBytes = gapFillBytes ?? options.FlushGapFillBytes,
        });
        var directory = context.FreshDirectory(frequent, row);
        IReadOnlyList<FlushStats> log = [];
        var figures = FillDurableWorkload.Fill(frequent, directory, context.Counts, new RandomKeySource(), out var seconds,
            instance => log = ((StorageEngineInstance)instance).FlushLog);
        context.Discard(directory);

        var lines = Lines(log);
        var thirds = Thirds(log);
        var details = new List<Figure> { new("flushes", Format.Count(log.Count)), new("clean pages written to fill gaps", Format.Count(log.Sum(f => f.GapPagesWritten))) };
        details.AddRange(thirds.Select(t => new Figure(t.Label, t.Text)));
        details.AddRange(Pick(lines).Select(line => new Figure(line.Label, line.Text)));
        details.AddRange(figures);
        var rate = context.Counts.Transactions / seconds;
        if (gapFillBytes is not null) return new RowResult(row, rate, details);
        var chart = log.Count == 0 ? null : context.AddChart("w8", () => Plot(log));
        context.AddSection($"W8 seeks-over-time: every flush of W1 on storage (scratch budget {ScratchBudgetBytes >> 20} MiB)", log.Count == 0
            ? "No flushes."
            : string.Join('\n', thirds.Select(t => $"- {t.Label}: {t.Text}")) + "\n\n" + (chart is null ? "" : $"![runs per flush]({chart})\n\n") + "```\n" + string.Join('\n', lines) + "\n```");
        return new RowResult(row, rate, details);
    }

    /// <summary>Runs per flush and per 1,000 pages over the first, middle and last third of the flushes.</summary>
    private static List<(string Label, string Text)> Thirds(IReadOnlyList<FlushStats> log)
    {
        var result = new List<(string, string)>();
        if (log.Count == 0) return result;
        var names = new[] { "first", "middle", "last" };
        for (var t = 0; t < 3; t++)
        {
            var from = log.Count * t / 3;
            var to = log.Count * (t + 1) / 3;
            if (to <= from) continue;
            var part = log.Skip(from).Take(to - from).ToList();
            var runs = part.Sum(f => (long)f.Runs);
            var pages = part.Sum(f => f.PagesWritten);
            result.Add(($"{names[t]} third of flushes (runs per flush / runs per 1,000 pages)",
                string.Create(CultureInfo.InvariantCulture, $"{(double)runs / part.Count:N1} / {(pages == 0 ? 0 : runs * 1000.0 / pages):N1} ({part.Count} flushes, {pages:N0} pages in {runs:N0} runs)")));
        }
        return result;
    }

    private static ScottPlot.Plot Plot(IReadOnlyList<FlushStats> log)
    {
        var plot = new ScottPlot.Plot();
        var xs = log.Select(f => (double)f.FlushNumber).ToArray();
        var runs = plot.Add.Scatter(xs, log.Select(f => (double)f.Runs).ToArray());
        runs.LegendText = "runs (seeks) per flush";
        var pages = plot.Add.Scatter(xs, log.Select(f => f.PagesWritten / 100.0).ToArray());
        pages.LegendText = "pages per flush / 100";
        plot.Title("W8: runs per flush over W1");
        plot.XLabel("flush");
        plot.ShowLegend();
        return plot;
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
            text.Append(CultureInfo.InvariantCulture, $"({flush.LeafPages:N0} leaves, {flush.BranchPages:N0} branches, {flush.OverflowPages:N0} overflows");
            text.Append(flush.GapPagesWritten > 0 ? string.Create(CultureInfo.InvariantCulture, $", {flush.GapPagesWritten:N0} clean pages filling gaps)") : ")");
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
