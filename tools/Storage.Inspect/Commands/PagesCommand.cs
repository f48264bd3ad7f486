using System.CommandLine;
namespace Storage.Inspect.Commands;

/// <summary><c>pages &lt;dir&gt;</c>: one row per page below the next page number: id, type, tree, items, overflow pages.</summary>
internal static class PagesCommand
{
    public static Command Create() => Cli.DirectoryCommand("pages", "One row per page below the next page number: id, type, owning tree, items, overflow run, bytes used.", Run);

    public static int Run(string directory, bool json, TextWriter output, TextWriter error)
    {
        var report = StatCommand.CheckOrThrow(directory, collectPages: true, output, error);
        var names = report.Trees.GroupBy(t => t.TreeId).ToDictionary(g => g.Key, g => g.First().DisplayName);
        var pages = report.Pages!;
        var rows = Enumerable.Range(0, pages.Length).Select(i =>
        {
            var info = pages[i];
            var tree = info.TreeId >= 0 && names.TryGetValue(info.TreeId, out var name) ? name : null;
            return (Id: (long)i, Type: TypeName(info.Kind), Tree: tree, Items: info.Kind is PageKind.Branch or PageKind.Leaf ? info.Items : 0,
                Overflow: info.Kind == PageKind.Overflow ? info.Items : 0, Used: info.UsedBytes);
        });
        if (json)
        {
            Output.Json(output, rows.Select(r => new { id = r.Id, type = r.Type, tree = r.Tree, items = r.Items, overflow = r.Overflow, usedBytes = r.Used }));
        }
        else
        {
            Output.Table(output, ["id", "type", "tree", "items", "overflow", "used"],
                rows.Select(r => new[] { r.Id.ToString(), r.Type, r.Tree ?? "", r.Items == 0 ? "" : r.Items.ToString(), r.Overflow == 0 ? "" : r.Overflow.ToString(), r.Used == 0 ? "" : Output.N(r.Used) }));
        }
        return StatCommand.ReportProblems(report, error);
    }

    public static string TypeName(PageKind kind) => kind switch
    {
        PageKind.FileHeader => "header",
        PageKind.Reserved => "reserved",
        PageKind.FreeSpaceBitmap => "bitmap",
        PageKind.Branch => "branch",
        PageKind.Leaf => "leaf",
        PageKind.Overflow => "overflow",
        PageKind.OverflowContinuation => "overflow+",
        PageKind.Free => "free",
        _ => "unknown",
    };
}
