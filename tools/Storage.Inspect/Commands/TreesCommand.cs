using System.CommandLine;
namespace Storage.Inspect.Commands;

/// <summary><c>trees &lt;dir&gt;</c>: every tree with entries, depth, page counts and bytes used against allocated.</summary>
internal static class TreesCommand
{
    public static Command Create() => Cli.DirectoryCommand("trees", "Every tree: entries, depth, branch, leaf and overflow pages, bytes used against allocated.", Run);

    public static int Run(string directory, bool json, TextWriter output, TextWriter error)
    {
        var report = StatCommand.CheckOrThrow(directory, collectPages: false, output, error);
        if (json)
        {
            Output.Json(output, report.Trees.Select(t => new
            {
                name = t.Name,
                treeId = t.TreeId,
                rootPage = t.RootPage,
                entries = t.Entries,
                depth = t.Depth,
                branchPages = t.BranchPages,
                leafPages = t.LeafPages,
                overflowPages = t.OverflowPages,
                usedBytes = t.UsedBytes,
                allocatedBytes = t.AllocatedBytes,
            }));
        }
        else
        {
            Output.Table(output, ["tree", "id", "entries", "depth", "branch", "leaf", "overflow", "used", "allocated", "fill"],
                report.Trees.Select(t => new[]
                {
                    t.DisplayName, t.TreeId.ToString(), Output.N(t.Entries), t.Depth.ToString(), Output.N(t.BranchPages), Output.N(t.LeafPages),
                    Output.N(t.OverflowPages), Output.N(t.UsedBytes), Output.N(t.AllocatedBytes), Output.Percent(t.UsedBytes, t.AllocatedBytes),
                }));
        }
        return StatCommand.ReportProblems(report, error);
    }
}
