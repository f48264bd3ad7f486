using System.Text;

namespace Storage.Benchmarks.Reporting;

/// <summary>
/// Formats a <see cref="ResultTable"/>: the comparison table (workload rows, engine columns, then
/// storage's ratio against each other engine), a detail table per engine, and the errors verbatim.
/// </summary>
internal static class MarkdownReport
{
    public const string ReferenceEngine = "storage";

    public static string Render(ResultTable table, IReadOnlyList<string> preamble, IReadOnlyList<string> notes, IReadOnlyList<(string Title, string Markdown)> sections)
    {
        var text = new StringBuilder();
        text.AppendLine("# Workload comparison").AppendLine();
        foreach (var line in preamble) text.AppendLine(line);
        text.AppendLine();
        AppendComparison(text, table);
        text.AppendLine();
        foreach (var line in notes) text.AppendLine(line);
        text.AppendLine();
        foreach (var (title, markdown) in sections)
        {
            text.AppendLine($"## {title}").AppendLine();
            text.AppendLine(markdown.TrimEnd()).AppendLine();
        }
        text.AppendLine("## Details").AppendLine();
        foreach (var engine in table.Engines) AppendDetails(text, table, engine);
        if (table.Errors.Count > 0)
        {
            text.AppendLine("## Errors").AppendLine();
            foreach (var error in table.Errors)
            {
                text.AppendLine($"### {error.Engine}, {error.Workload}").AppendLine();
                text.AppendLine("```").AppendLine(error.Description.TrimEnd()).AppendLine("```").AppendLine();
            }
        }
        return text.ToString();
    }

    private static void AppendComparison(StringBuilder text, ResultTable table)
    {
        var others = table.Engines.Contains(ReferenceEngine)
            ? table.Engines.Where(engine => engine != ReferenceEngine).ToList()
            : [];
        var header = new List<string> { "workload", "unit" };
        header.AddRange(table.Engines);
        header.AddRange(others.Select(other => $"{ReferenceEngine} / {other}"));
        AppendRow(text, header);
        var alignment = new List<string> { "---", "---" };
        alignment.AddRange(Enumerable.Repeat("--:", header.Count - 2));
        AppendRow(text, alignment);

        foreach (var row in table.Rows)
        {
            var cells = new List<string> { row.Label, row.Unit };
            cells.AddRange(table.Engines.Select(engine => CellText(table.Get(row.Key, engine))));
            var reference = table.Get(row.Key, ReferenceEngine).Throughput;
            foreach (var other in others)
            {
                var value = table.Get(row.Key, other).Throughput;
                cells.Add(reference is { } mine && value is { } theirs && theirs > 0 ? Format.Ratio(mine / theirs) : "-");
            }
            AppendRow(text, cells);
        }
    }

    private static void AppendDetails(StringBuilder text, ResultTable table, string engine)
    {
        var rows = table.Rows.Where(row => table.Details(row.Key, engine) is not null).ToList();
        text.AppendLine($"### {engine}").AppendLine();
        if (rows.Count == 0)
        {
            var texts = table.Rows.Select(row => table.Get(row.Key, engine).Text).Distinct().ToList();
            text.AppendLine(texts.Count == 1 ? $"No results: {texts[0]}." : "No results.").AppendLine();
            return;
        }
        var labels = new List<string>();
        foreach (var row in rows)
        {
            foreach (var figure in table.Details(row.Key, engine)!)
            {
                if (!labels.Contains(figure.Label)) labels.Add(figure.Label);
            }
        }
        var header = new List<string> { "figure" };
        header.AddRange(rows.Select(row => row.Label));
        AppendRow(text, header);
        var alignment = new List<string> { "---" };
        alignment.AddRange(Enumerable.Repeat("--:", rows.Count));
        AppendRow(text, alignment);
        foreach (var label in labels)
        {
            var cells = new List<string> { label };
            foreach (var row in rows)
            {
                var figure = table.Details(row.Key, engine)!.FirstOrDefault(f => f.Label == label);
                cells.Add(figure.Label is null ? "" : figure.Value);
            }
            AppendRow(text, cells);
        }
        text.AppendLine();
    }

    private static string CellText(ResultTable.Cell cell) =>
        cell.Throughput is { } value ? Format.Rate(value) : cell.Text ?? "";

    private static void AppendRow(StringBuilder text, IEnumerable<string> cells) =>
        text.Append("| ").AppendJoin(" | ", cells.Select(Escape)).AppendLine(" |");

    private static string Escape(string cell) => cell.Replace("|", "\\|", StringComparison.Ordinal).Replace('\n', ' ');
}
