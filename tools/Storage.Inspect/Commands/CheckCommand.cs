using System.Diagnostics;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary><c>check &lt;dir&gt;</c>: the full consistency check. Exit 0 when consistent, 1 when it finds problems.</summary>
internal static class CheckCommand
{
    public static int Run(ParsedArgs args, TextWriter output, TextWriter error)
    {
        var directory = args.Expect(1, "<dir>")[0];
        var progress = ProgressFor(output, error);
        var report = EnvironmentSnapshot.Check(directory, collectPages: true, progress);
        if (progress is not null) error.Write("\r" + new string(' ', 40) + "\r");
        var open = report.Problems.FirstOrDefault(p => p.Kind == "open");
        if (open is not null && !args.Json) throw new InspectionException(open.Message);
        if (args.Json)
        {
            Output.Json(output, new
            {
                directory = Path.GetFullPath(directory),
                consistent = report.IsConsistent,
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
        output.WriteLine(report.IsConsistent ? "consistent" : $"NOT consistent: {Output.N(report.ErrorCount)} error{(report.ErrorCount == 1 ? "" : "s")}");
        return report.IsConsistent ? Cli.Ok : Cli.Problems;
    }

    /// <summary>A progress line on stderr, only when writing to a terminal and only once the run has taken a while.</summary>
    private static ProgressBar? ProgressFor(TextWriter output, TextWriter error) =>
        !ReferenceEquals(output, Console.Out) || Console.IsOutputRedirected || Console.IsErrorRedirected ? null : new ProgressBar(error);

    /// <summary>Draws the bar on the checking thread as it reports (<see cref="Progress{T}"/> would post to the thread pool, after the line is cleared).</summary>
    private sealed class ProgressBar(TextWriter error) : IProgress<CheckProgress>
    {
        private readonly Stopwatch _clock = Stopwatch.StartNew();

        public void Report(CheckProgress value)
        {
            if (_clock.ElapsedMilliseconds < 500 || value.PagesTotal <= 0) return;
            var fraction = Math.Clamp(value.PagesExamined / (double)value.PagesTotal, 0, 1);
            var filled = (int)(fraction * 30);
            error.Write($"\r[{new string('#', filled)}{new string('.', 30 - filled)}] {fraction:P0}");
        }
    }
}
