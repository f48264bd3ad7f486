namespace Storage.Inspect.Commands;

/// <summary><c>trees &lt;dir&gt;</c>: every tree with entries, depth, page counts and bytes used against allocated.</summary>
internal static class TreesCommand
{
    public static int Run(ParsedArgs args, TextWriter output, TextWriter error)
    {
        var directory = args.Expect(1, "<dir>")[0];
        var report = StatCommand.CheckOrThrow(directory, collectPages: false);
        if (args.Json)
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
