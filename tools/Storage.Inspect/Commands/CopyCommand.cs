using Storage.Inspection;
using Storage.Paging;

namespace Storage.Inspect.Commands;

/// <summary>
/// <c>copy --compact &lt;dir&gt; &lt;target&gt;</c>: reads the source's last committed state without its lock and writes every
/// tree, in key order, into a fresh environment at the target (which must not hold one yet). Only the target is written.
/// </summary>
internal static class CopyCommand
{
    private const int EntriesPerTransaction = 10_000;

    public static int Run(ParsedArgs args, TextWriter output, TextWriter error)
    {
        if (!args.Flags.Contains("--compact")) throw new UsageException("only compacting copies are supported: pass --compact");
        var positional = args.Expect(2, "<dir> <target>");
        var target = Path.GetFullPath(positional[1]);
        if (Directory.Exists(target) && Directory.EnumerateFileSystemEntries(target).Any())
        {
            throw new InspectionException($"the target {target} is not empty");
        }
        using var snapshot = EnvironmentSnapshot.Open(positional[0]);
        if (Path.GetFullPath(snapshot.DirectoryPath) == target) throw new InspectionException("the target is the source");
        var trees = SnapshotTrees.ListTrees(snapshot);
        long entries = 0;
        using (var env = StorageEnvironment.Open(target))
        {
            foreach (var named in trees)
            {
                var tx = env.BeginWrite();
                try
                {
                    var tree = tx.CreateTree(named.Name);
                    var inTransaction = 0;
                    SnapshotTrees.ForEachEntry(snapshot, named.Header, (key, value) =>
                    {
                        tree.Put(key, value);
                        entries++;
                        if (++inTransaction < EntriesPerTransaction) return;
                        tx.Commit();
                        tx.Dispose();
                        tx = env.BeginWrite();
                        tree = tx.OpenTree(named.Name);
                        inTransaction = 0;
                    });
                    tx.Commit();
                }
                finally
                {
                    tx.Dispose();
                }
            }
        }
        var before = snapshot.NextPageNumber;
        using var copied = EnvironmentSnapshot.Open(target);
        var after = copied.NextPageNumber;
        if (args.Json)
        {
            Output.Json(output, new { source = snapshot.DirectoryPath, target, trees = trees.Count, entries, sourcePages = before, targetPages = after });
        }
        else
        {
            output.WriteLine($"copied {trees.Count} trees, {Output.N(entries)} entries: {Output.N(before)} pages ({Output.Bytes(before * PageLayout.PageSizeBytes)}) -> {Output.N(after)} pages ({Output.Bytes(after * PageLayout.PageSizeBytes)})");
        }
        return Cli.Ok;
    }
}
