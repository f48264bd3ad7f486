using System.CommandLine;
using System.Globalization;
using System.Text;

namespace Storage.Inspect.Commands;

/// <summary><c>freespace &lt;dir&gt;</c>: free pages, largest free run and a fill bar per section.</summary>
internal static class FreeSpaceCommand
{
    public static Command Create() => Cli.DirectoryCommand("freespace", "Free pages, largest free run and a fill bar per section of the data file.", Run);

    public static int Run(string directory, bool json, TextWriter output, TextWriter error)
    {
        var report = StatCommand.CheckOrThrow(directory, collectPages: false, output, error);
        if (json)
        {
            Output.Json(output, new
            {
                pagesPerSection = CheckedSection.PagesPerSection,
                freePages = report.FreePages,
                sections = report.Sections.Select(s => new { section = s.Section, firstPage = s.FirstPage, pages = s.Pages, freePages = s.FreePages, largestFreeRun = s.LargestFreeRun }),
            });
            return StatCommand.ReportProblems(report, error);
        }
        output.WriteLine($"{Output.N(report.FreePages)} free of {Output.N(report.PagesInUseOrFree)} pages, in sections of {CheckedSection.PagesPerSection} pages");
        Output.Table(output, ["section", "pages", "free", "largest run", "free share"],
            report.Sections.Select(s => new[] { s.Section.ToString(CultureInfo.InvariantCulture), $"{s.FirstPage}-{s.FirstPage + s.Pages - 1}", Output.N(s.FreePages), Output.N(s.LargestFreeRun), Bar(s.FreePages, s.Pages) }));
        return StatCommand.ReportProblems(report, error);
    }

    private static string Bar(long part, long whole)
    {
        var filled = whole == 0 ? 0 : (int)Math.Round(20.0 * part / whole);
        return new StringBuilder().Append('[').Append('#', filled).Append('.', 20 - filled).Append("] ").Append(Output.Percent(part, whole)).ToString();
    }
}

/// <summary><c>map --output FILE.svg &lt;dir&gt;</c>: the data file as a grid of cells coloured by page type, free runs included.</summary>
internal static class MapCommand
{
    private const int Columns = 128;
    private const int Cell = 6;
    private const int MaxCells = 65536;

    public static Command Create()
    {
        var directory = Cli.DirectoryArgument();
        var file = new Option<string>("--output")
        {
            Description = "The SVG file to write.",
            HelpName = "FILE.svg",
            Required = true,
        };
        var command = new Command("map", "A picture of the data file's pages as SVG: one cell per page (or group of pages), coloured by type, with a legend.")
        {
            directory,
            file,
        };
        command.SetAction(parse => Run(parse.GetRequiredValue(directory), parse.GetRequiredValue(file), parse.InvocationConfiguration.Output, parse.InvocationConfiguration.Error));
        return command;
    }

    public static int Run(string directory, string path, TextWriter output, TextWriter error)
    {
        var report = StatCommand.CheckOrThrow(directory, collectPages: true, output, error);
        var pages = report.Pages!;
        var pagesPerCell = Math.Max(1, (pages.Length + MaxCells - 1) / MaxCells);
        var cells = (pages.Length + pagesPerCell - 1) / pagesPerCell;
        var rows = (cells + Columns - 1) / Columns;
        var legendHeight = 40;
        var svg = new StringBuilder();
        svg.Append(CultureInfo.InvariantCulture, $"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{Columns * Cell}\" height=\"{rows * Cell + legendHeight}\" shape-rendering=\"crispEdges\">\n");
        svg.Append(CultureInfo.InvariantCulture, $"<title>{pages.Length} pages, {pagesPerCell} per cell</title>\n");
        for (var c = 0; c < cells; c++)
        {
            var first = (long)c * pagesPerCell;
            var kind = Dominant(pages, first, Math.Min(pages.Length, first + pagesPerCell));
            svg.Append(CultureInfo.InvariantCulture, $"<rect x=\"{c % Columns * Cell}\" y=\"{c / Columns * Cell}\" width=\"{Cell}\" height=\"{Cell}\" fill=\"{Color(kind)}\"><title>page {first}: {PagesCommand.TypeName(kind)}</title></rect>\n");
        }
        var x = 0;
        foreach (var kind in Enum.GetValues<PageKind>())
        {
            svg.Append(CultureInfo.InvariantCulture, $"<rect x=\"{x}\" y=\"{rows * Cell + 14}\" width=\"10\" height=\"10\" fill=\"{Color(kind)}\"/><text x=\"{x + 13}\" y=\"{rows * Cell + 23}\" font-size=\"10\" font-family=\"sans-serif\">{PagesCommand.TypeName(kind)}</text>\n");
            x += 85;
        }
        svg.Append("</svg>\n");
        File.WriteAllText(path, svg.ToString());
        output.WriteLine($"wrote {Path.GetFullPath(path)}: {Output.N(pages.Length)} pages, {pagesPerCell} per cell");
        return StatCommand.ReportProblems(report, error);
    }

    private static PageKind Dominant(CheckedPage[] pages, long from, long to)
    {
        Span<int> counts = stackalloc int[16];
        for (var p = from; p < to; p++) counts[(int)pages[p].Kind]++;
        var best = 0;
        for (var k = 1; k < counts.Length; k++) if (counts[k] > counts[best]) best = k;
        return (PageKind)best;
    }

    internal static string Color(PageKind kind) => kind switch
    {
        PageKind.FileHeader => "#000000",
        PageKind.Reserved => "#555555",
        PageKind.FreeSpaceBitmap => "#8e44ad",
        PageKind.Branch => "#c0392b",
        PageKind.Leaf => "#2980b9",
        PageKind.Overflow => "#e67e22",
        PageKind.OverflowContinuation => "#f5b041",
        PageKind.Free => "#ecf0f1",
        _ => "#ff00ff",
    };
}
