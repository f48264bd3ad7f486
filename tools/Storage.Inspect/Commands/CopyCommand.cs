using System.CommandLine;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary>
/// <c>copy --compact &lt;dir&gt; &lt;target&gt;</c>: reads the source's last committed state without its lock and writes every
/// tree, in key order, into a fresh environment at the target (which must not hold one yet). Only the target is written.
/// </summary>
/// <remarks>
/// The source may be open in another process. Every page read is checked to be the version of the snapshot's state (see
/// <see cref="SnapshotChangedException"/>): when that process's flusher overwrote one while the copy ran, the copy (the
/// target this command made) is thrown away and taken again from a new snapshot, up to <see cref="Attempts"/> times.
/// A closed source that fails the check is damaged, and the copy says so.
/// </remarks>
internal static class CopyCommand
{
    private const int EntriesPerTransaction = 10_000;

    private const int Attempts = 5;

    public static Command Create()
    {
        var source = Cli.DirectoryArgument("The environment to copy (it may be open in another process).");
        var targetDirectory = new Argument<string>("target") { Description = "Where to create the copy: a missing or empty directory." };
        var compact = new Option<bool>("--compact") { Description = "Copy every tree in key order into a fresh environment, leaving free pages behind (the only kind of copy; required)." };
        var json = Cli.JsonOption();
        var command = new Command("copy", "A compacting copy of the last committed state into a new directory; only the target is written.")
        {
            source,
            targetDirectory,
            compact,
            json,
        };
        command.Validators.Add(result =>
        {
            if (Cli.HasRequiredArguments(result) && !result.GetValue(compact)) result.AddError("only compacting copies are supported: pass --compact");
        });
        command.SetAction(parse => Run(parse.GetRequiredValue(source), parse.GetRequiredValue(targetDirectory), parse.GetValue(json), parse.InvocationConfiguration.Output, parse.InvocationConfiguration.Error));
        return command;
    }

    public static int Run(string source, string targetDirectory, bool json, TextWriter output, TextWriter error)
    {
        var target = Path.GetFullPath(targetDirectory);
        if (Directory.Exists(target) && Directory.EnumerateFileSystemEntries(target).Any())
        {
            throw new InspectionException($"the target {target} is not empty");
        }
        var targetExisted = Directory.Exists(target);
        for (var attempt = 1; ; attempt++)
        {
            try
            {
                return Copy(source, target, json, output);
            }
            catch (SnapshotChangedException e) when (EnvironmentSnapshot.IsLocked(source))
            {
                // The target holds only what this command wrote: it goes, and the copy starts again.
                if (Directory.Exists(target)) Directory.Delete(target, recursive: true);
                if (targetExisted) Directory.CreateDirectory(target);
                if (attempt == Attempts)
                {
                    throw new InspectionException($"the environment changed under the copy {Attempts} times (last: {e.Message}); copy it when it is less busy");
                }
                error.WriteLine($"the environment changed under the copy ({e.Message}); starting again from a new snapshot");
            }
        }
    }

    private static int Copy(string source, string target, bool json, TextWriter output)
    {
        using var snapshot = EnvironmentSnapshot.Open(source);
        if (Path.GetFullPath(snapshot.DirectoryPath) == target) throw new InspectionException("the target is the source");
        var trees = snapshot.ListTrees();
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
                    snapshot.ForEachEntry(named, (key, value) =>
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
        if (json)
        {
            Output.Json(output, new { source = snapshot.DirectoryPath, target, trees = trees.Count, entries, sourcePages = before, targetPages = after, snapshotTransaction = snapshot.TransactionId });
        }
        else
        {
            output.WriteLine($"copied {trees.Count} trees, {Output.N(entries)} entries as of transaction {Output.N(snapshot.TransactionId)}: {Output.N(before)} pages ({Output.Bytes(before * snapshot.Header.PageSizeBytes)}) -> {Output.N(after)} pages ({Output.Bytes(after * copied.Header.PageSizeBytes)})");
        }
        return Cli.Ok;
    }
}
