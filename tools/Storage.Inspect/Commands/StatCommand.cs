using System.CommandLine;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary><c>stat &lt;dir&gt;</c>: environment totals in the manner of mdb_stat, with free pages by section.</summary>
internal static class StatCommand
{
    public static Command Create() => Cli.DirectoryCommand("stat", "Environment totals in the manner of mdb_stat, and free pages by section.", Run);

    public static int Run(string directory, bool json, TextWriter output, TextWriter error)
    {
        var report = CheckOrThrow(directory, collectPages: false, output, error);
        var trees = report.Trees;
        var root = trees[0];
        long branch = trees.Sum(t => t.BranchPages), leaf = trees.Sum(t => t.LeafPages), overflow = trees.Sum(t => t.OverflowPages);
        var sections = report.Sections.Where(s => s.FreePages > 0).ToList();
        if (json)
        {
            Output.Json(output, new
            {
                pageSize = CheckReport.PageSizeBytes,
                lastTransaction = report.TransactionId,
                filePages = report.FilePages,
                pagesInUseOrFree = report.PagesInUseOrFree,
                reservedPages = report.ReservedPages,
                treePages = report.ReachablePages,
                branchPages = branch,
                leafPages = leaf,
                overflowPages = overflow,
                freePages = report.FreePages,
                leakedPages = report.LeakedPages,
                trees = trees.Count - 1,
                entries = trees.Skip(1).Sum(t => t.Entries),
                rootTree = new { depth = root.Depth, entries = root.Entries, branchPages = root.BranchPages, leafPages = root.LeafPages },
                pagesPerSection = CheckedSection.PagesPerSection,
                freeBySection = sections.Select(s => new { section = s.Section, firstPage = s.FirstPage, pages = s.Pages, freePages = s.FreePages, largestFreeRun = s.LargestFreeRun }),
            });
            return ReportProblems(report, error);
        }
        output.WriteLine("Environment");
        output.WriteLine($"  Page size: {CheckReport.PageSizeBytes}");
        output.WriteLine($"  Last transaction ID: {report.TransactionId}");
        output.WriteLine($"  File pages: {Output.N(report.FilePages)} ({Output.Bytes(report.FilePages * CheckReport.PageSizeBytes)})");
        output.WriteLine($"  Pages in use or free: {Output.N(report.PagesInUseOrFree)}");
        output.WriteLine($"  Reserved pages (headers, bitmaps): {Output.N(report.ReservedPages)}");
        output.WriteLine($"  Tree pages: {Output.N(report.ReachablePages)} (branch {Output.N(branch)}, leaf {Output.N(leaf)}, overflow {Output.N(overflow)})");
        output.WriteLine($"  Free pages: {Output.N(report.FreePages)} ({Output.Percent(report.FreePages, report.PagesInUseOrFree)})");
        output.WriteLine($"  Leaked pages: {Output.N(report.LeakedPages)}");
        output.WriteLine($"  Trees: {trees.Count - 1}, entries: {Output.N(trees.Skip(1).Sum(t => t.Entries))}");
        output.WriteLine("Root tree (tree names)");
        output.WriteLine($"  Tree depth: {root.Depth}");
        output.WriteLine($"  Branch pages: {root.BranchPages}");
        output.WriteLine($"  Leaf pages: {root.LeafPages}");
        output.WriteLine($"  Entries: {root.Entries}");
        output.WriteLine($"Free pages by section ({CheckedSection.PagesPerSection} pages each; {sections.Count} of {report.Sections.Count} sections have free pages)");
        Output.Table(output, ["section", "pages", "free", "largest run"],
            sections.Select(s => new[] { $"{s.Section}", $"{s.FirstPage}-{s.FirstPage + s.Pages - 1}", Output.N(s.FreePages), Output.N(s.LargestFreeRun) }));
        return ReportProblems(report, error);
    }

    /// <summary>
    /// Runs the check, with a progress bar on a terminal (<see cref="ProgressBar.For"/>); an environment that cannot be
    /// opened at all becomes a one-line error.
    /// </summary>
    internal static CheckReport CheckOrThrow(string directory, bool collectPages, TextWriter output, TextWriter error)
    {
        var progress = ProgressBar.For(output, error);
        var report = EnvironmentSnapshot.Check(directory, collectPages, progress);
        progress?.Clear();
        var open = report.Problems.FirstOrDefault(p => p.Kind == "open");
        if (open is not null) throw new InspectionException(open.Message);
        return report;
    }

    /// <summary>Prints a one-line note when the check found problems; the exit code says so too.</summary>
    internal static int ReportProblems(CheckReport report, TextWriter error)
    {
        if (report.IsConsistent) return Cli.Ok;
        error.WriteLine($"warning: the environment has {report.ErrorCount} problems (first: {report.Problems.First(p => p.Severity == ProblemSeverity.Error)}); run 'check' for all");
        return Cli.Problems;
    }
}
