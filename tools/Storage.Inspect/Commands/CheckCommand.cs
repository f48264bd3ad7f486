using System.CommandLine;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary><c>check &lt;dir&gt;</c>: the full consistency check. Exit 0 when consistent, 1 when it finds problems.</summary>
internal static class CheckCommand
{
    public static Command Create() => Cli.DirectoryCommand("check", "Full consistency check: every page accounted for once, checksums, key order, tree shape, counters, header slots, journal. Exit 0 when consistent, 1 when problems are found.", Run);

    public static int Run(string directory, bool json, TextWriter output, TextWriter error)
    {
        var progress = ProgressBar.For(output, error);
        var report = EnvironmentSnapshot.Check(directory, collectPages: true, progress);
        progress?.Clear();
        var open = report.Problems.FirstOrDefault(p => p.Kind == "open");
        if (open is not null && !json) throw new InspectionException(open.Message);
        if (json)
        {
            Output.Json(output, new
            {
                directory = Path.GetFullPath(directory),
                consistent = report.IsConsistent,
                openElsewhere = report.WhileOpenElsewhere,
                attempts = report.Attempts,
                transactionId = report.TransactionId,
                pagesInUseOrFree = report.PagesInUseOrFree,
                filePages = report.FilePages,
                reservedPages = report.ReservedPages,
                reachablePages = report.ReachablePages,
                freePages = report.FreePages,
                leakedPages = report.LeakedPages,
                holeBytes = report.HoleBytes,
                trees = report.Trees.Count - 1,
                errors = report.ErrorCount,
                problemsOmitted = report.ProblemsOmitted,
                problems = report.Problems.Select(p => new
                {
                    severity = p.Severity.ToString().ToLowerInvariant(),
                    kind = p.Kind,
                    message = p.Message,
                    file = p.File,
                    page = p.PageNumber < 0 ? (long?)null : p.PageNumber,
                    tree = p.Tree,
                    offset = p.OffsetBytes < 0 ? (long?)null : p.OffsetBytes,
                }),
            });
            return report.IsConsistent ? Cli.Ok : Cli.Problems;
        }
        output.WriteLine($"checked {Path.GetFullPath(directory)}: transaction {report.TransactionId}, {Output.N(report.PagesInUseOrFree)} pages " +
            $"({Output.N(report.ReservedPages)} reserved, {Output.N(report.ReachablePages)} in trees, {Output.N(report.FreePages)} free, {Output.N(report.LeakedPages)} leaked), {Math.Max(0, report.Trees.Count - 1)} trees{(report.HoleBytes > 0 ? $", {Output.Bytes(report.HoleBytes)} given back to the file system" : "")}");
        foreach (var problem in report.Problems) output.WriteLine(problem.ToString());
        if (report.ProblemsOmitted > 0) output.WriteLine($"... and {Output.N(report.ProblemsOmitted)} more problems");
        if (report.WhileOpenElsewhere)
        {
            output.WriteLine($"open in another process: read {report.Attempts} time{(report.Attempts == 1 ? "" : "s")}; " +
                $"a finding counts only when {EnvironmentSnapshot.LiveConfirmations} reads in a row find it in the same place");
        }
        var unsettled = report.Problems.Any(p => p.Kind == "unsettled");
        output.WriteLine(!report.IsConsistent ? $"NOT consistent: {Output.N(report.ErrorCount)} error{(report.ErrorCount == 1 ? "" : "s")}"
            : unsettled ? "no damage confirmed (the environment changed under every read; check again when it is quieter)"
            : "consistent");
        return report.IsConsistent ? Cli.Ok : Cli.Problems;
    }
}
