using System.Globalization;
using System.Text.Json;
using System.Text.RegularExpressions;
using ScottPlot;
using SkiaSharp;
using Storage.Benchmarks.Engines;

namespace Storage.Benchmarks.Reporting;

/// <summary>
/// The chart of a run: the throughputs as JSON next to the Markdown report, and an SVG chart drawn with
/// ScottPlot. Rows measure different things (tx/s, gets/s, entries/s), so each row's bars are its figures
/// divided by the reference engine's (storage when it ran), on one axis; every bar is labelled with its
/// figure. Cells without a figure have no bar, only their text; rows and engines without any figure are left out.
/// </summary>
internal static class Chart
{
    private const string ReferenceEngine = "storage";

    // One colour per engine, by its place in EngineCatalog.All, so an engine keeps its colour whichever engines ran.
    private static readonly Color[] s_colors =
        [Color.FromHex("#1f77b4"), Color.FromHex("#ff7f0e"), Color.FromHex("#2ca02c"), Color.FromHex("#d62728"), Color.FromHex("#9467bd"), Color.FromHex("#8c564b")];

    // Sans-serif families to draw with, the first one installed; Skia's own choice may be a serif font.
    private static readonly string[] s_sansFamilies = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "Open Sans", "Segoe UI", "Arial", "Helvetica"];

    private static readonly Regex s_fontFamily = new("font-family=\"([^\",]*)\"", RegexOptions.Compiled);

    private static readonly CultureInfo s_culture = CultureInfo.InvariantCulture;

    public static void Write(ResultTable table, string root, string basePath, string title, string subtitle, TextWriter output)
    {
        var cells = new List<Dictionary<string, object?>>();
        foreach (var row in table.Rows)
        {
            foreach (var engine in table.Engines)
            {
                var cell = table.Get(row.Key, engine);
                cells.Add(new Dictionary<string, object?>
                {
                    ["workload"] = row.Label,
                    ["unit"] = row.Unit,
                    ["engine"] = engine,
                    ["value"] = Figure(cell),
                    ["text"] = cell.Text,
                });
            }
        }
        var document = new Dictionary<string, object?> { ["title"] = title, ["subtitle"] = subtitle, ["engines"] = table.Engines, ["cells"] = cells };
        File.WriteAllText(basePath + ".json", JsonSerializer.Serialize(document, new JsonSerializerOptions { WriteIndented = true }));

        var drawing = Draw(table, title, subtitle);
        if (drawing is null)
        {
            output.WriteLine("No chart: no row has a throughput.");
            return;
        }
        using var plot = drawing.Plot;
        var svg = basePath + ".svg";
        // The SVG names the font it was measured with; a viewer without it falls back to any sans-serif font.
        var xml = plot.GetSvgXml(drawing.Width, drawing.Height);
        File.WriteAllText(svg, s_fontFamily.Replace(xml, match => $"font-family=\"{match.Groups[1].Value}, sans-serif\""));
        output.WriteLine($"Chart written to {Path.GetRelativePath(root, svg)}");
        if (SKFontManager.Default.FontFamilyCount == 0)
        {
            output.WriteLine("The chart has no text: Skia found no fonts under /usr/share/fonts (scripts/prerequisites.sh installs fonts-dejavu-core as root).");
        }
    }

    /// <summary>Saves a workload's own chart (W8's runs per flush) as SVG.</summary>
    public static void WriteExtra(Func<Plot> draw, string path, string root, TextWriter output)
    {
        using var plot = draw();
        var xml = plot.GetSvgXml(900, 420);
        File.WriteAllText(path, s_fontFamily.Replace(xml, match => $"font-family=\"{match.Groups[1].Value}, sans-serif\""));
        output.WriteLine($"Chart written to {Path.GetRelativePath(root, path)}");
    }

    /// <summary>The chart of <paramref name="table"/> and the size it is meant to be saved at; null when no cell has a figure.</summary>
    internal static Drawing? Draw(ResultTable table, string title, string subtitle)
    {
        var rows = table.Rows.Where(row => table.Engines.Any(engine => Figure(table.Get(row.Key, engine)) is not null)).ToList();
        var engines = table.Engines.Where(engine => rows.Any(row => Figure(table.Get(row.Key, engine)) is not null)).ToList();
        if (rows.Count == 0) return null;
        var reference = engines.Contains(ReferenceEngine) ? ReferenceEngine : engines[0];
        var font = s_sansFamilies.Intersect(SKFontManager.Default.GetFontFamilies()).FirstOrDefault() ?? Fonts.Default;

        var plot = new Plot();
        var bars = new List<Bar>();
        var ticks = new List<Tick>();
        var band = 0.84 / engines.Count;
        var largest = 1.0;
        for (var r = 0; r < rows.Count; r++)
        {
            var row = rows[r];
            var center = rows.Count - 1 - r; // the first row on top
            var figures = engines.ToDictionary(engine => engine, engine => Figure(table.Get(row.Key, engine)));
            // Without the reference engine's figure a row is drawn against its fastest engine, and its label says so.
            var against = figures[reference] is not null ? reference : engines.First(engine => figures[engine] == figures.Values.Max());
            ticks.Add(new Tick(center, $"{row.Label} ({row.Unit}){(against == reference ? "" : $", 1x = {against}")}", isMajor: true));
            for (var e = 0; e < engines.Count; e++)
            {
                var engine = engines[e];
                var position = center + 0.42 - (e + 0.5) * band;
                if (figures[engine] is { } value)
                {
                    var ratio = value / figures[against]!.Value;
                    largest = Math.Max(largest, ratio);
                    bars.Add(new Bar { Position = position, Value = ratio, Size = band * 0.88, FillColor = ColorOf(engine), LineWidth = 0 });
                    AddText(plot, Compact(value), ratio, position, font, Colors.Black);
                }
                else
                {
                    AddText(plot, Shorten(table.Get(row.Key, engine).Text ?? ""), 0, position, font, ColorOf(engine).Darken(0.3));
                }
            }
        }
        plot.Add.Bars(bars).Horizontal = true;
        var one = plot.Add.VerticalLine(1);
        one.Color = Colors.Gray;
        one.LineWidth = 1;
        one.LinePattern = LinePattern.Dashed;

        plot.Axes.Left.TickGenerator = new ScottPlot.TickGenerators.NumericManual([.. ticks]);
        plot.Axes.Left.MajorTickStyle.Length = 0;
        plot.Axes.Bottom.TickGenerator = new ScottPlot.TickGenerators.NumericAutomatic { LabelFormatter = value => value.ToString("0.##", s_culture) + "x" };
        plot.XLabel($"throughput relative to {reference} (= 1x); higher is better");
        plot.Axes.Bottom.Label.FontSize = 13;
        plot.Axes.Bottom.Label.Bold = false;
        plot.Grid.YAxisStyle.IsVisible = false;
        // Room on the right for the figures at the ends of the longest bars.
        plot.Axes.SetLimits(0, largest * 1.15, -0.5, rows.Count - 0.5);

        foreach (var engine in engines)
        {
            plot.Legend.ManualItems.Add(new LegendItem { LabelText = engine, FillColor = ColorOf(engine) });
        }
        plot.Legend.Orientation = Orientation.Horizontal;
        plot.Legend.ShadowColor = Colors.Transparent;
        plot.Legend.OutlineColor = Colors.Transparent;
        plot.Legend.FontName = font;
        plot.Legend.FontSize = 13;
        plot.ShowLegend(Edge.Top).Padding = new PixelPadding(0);

        // Engines that gave no figure at all (not available, say) are named under the title instead of in the legend.
        var absent = table.Engines.Except(engines)
            .Select(engine => (engine, texts: table.Rows.Select(row => table.Get(row.Key, engine).Text).Distinct().ToList()))
            .Select(item => item.texts.Count == 1 ? $"{item.engine}: {item.texts[0]}" : $"{item.engine}: no figures");
        plot.Title(title);
        plot.Axes.Title.Label.FontSize = 16;
        var below = new ScottPlot.Panels.TitlePanel();
        below.Label.Text = string.Join("; ", [subtitle, .. absent]);
        below.Label.FontName = font;
        below.Label.FontSize = 12;
        below.Label.Bold = false;
        below.Label.ForeColor = Colors.DimGray;
        plot.Axes.AddPanel(below);
        plot.Font.Set(font);

        return new Drawing(plot, 1000, 140 + rows.Count * Math.Max(40, 18 * engines.Count));
    }

    private static void AddText(Plot plot, string text, double x, double y, string font, Color color)
    {
        var label = plot.Add.Text(text, x, y);
        label.Alignment = Alignment.MiddleLeft;
        label.OffsetX = 4;
        label.LabelFontName = font;
        label.LabelFontSize = 10;
        label.LabelFontColor = color;
    }

    /// <summary>A finite throughput, or null.</summary>
    private static double? Figure(ResultTable.Cell cell) => cell.Throughput is { } value && double.IsFinite(value) ? value : null;

    private static Color ColorOf(string engine)
    {
        var index = 0;
        while (index < EngineCatalog.All.Count && !string.Equals(EngineCatalog.All[index].Name, engine, StringComparison.OrdinalIgnoreCase)) index++;
        return s_colors[index % s_colors.Length];
    }

    /// <summary>A cell's text cut to what fits beside its row's bars.</summary>
    private static string Shorten(string text) => text.Length <= 60 ? text : text[..59] + "…";

    /// <summary>A throughput in three significant digits: 41.6, 1,306, 51.3 k, 2.21 M.</summary>
    private static string Compact(double value) => value switch
    {
        >= 1e6 => (value / 1e6).ToString(value >= 1e8 ? "N0" : value >= 1e7 ? "N1" : "N2", s_culture) + " M",
        >= 1e4 => (value / 1e3).ToString(value >= 1e5 ? "N0" : "N1", s_culture) + " k",
        >= 100 => value.ToString("N0", s_culture),
        _ => value.ToString(value >= 10 ? "N1" : "N2", s_culture),
    };

    /// <summary>A chart and the size it is meant to be saved at, in pixels.</summary>
    internal sealed record Drawing(Plot Plot, int Width, int Height);
}
