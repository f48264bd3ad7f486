using System.CommandLine;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary>
/// <c>group &lt;root-dir&gt; &lt;branch-dir&gt;...</c>: an environment group with shared journals, member by member (its id,
/// synced transaction, its own and shared journal files) and shared file by shared file (its link count, each member's
/// number for it and entries in it); then each member checked alone and the group together: every shared file in a
/// member's folder is one the root wrote, and every member's replay of it reads the same file. Exit 1 on any problem.
/// </summary>
internal static class GroupCommand
{
    internal sealed record Member(string Directory, ulong EnvironmentId, long SyncedTransaction, long LastTransaction, int OwnFiles, int SharedFiles, bool Consistent, string Recovery);

    internal sealed record SharedFile(string RootName, long Links, string[] MemberNumbers, int[] MemberEntries);

    public static Command Create()
    {
        var root = Cli.DirectoryArgument("The group's root environment.", "root-dir");
        var branches = new Argument<string[]>("branch-dir")
        {
            Description = "Its branch environments.",
            Arity = ArgumentArity.ZeroOrMore,
        };
        var json = Cli.JsonOption();
        var command = new Command("group", "An environment group: its members, the shared journal files with their links and each member's entries in them; each member checked alone and the group together.")
        {
            root,
            branches,
            json,
        };
        command.SetAction(parse => Run([parse.GetRequiredValue(root), .. parse.GetValue(branches) ?? []], parse.GetValue(json), parse.InvocationConfiguration.Output));
        return command;
    }

    public static int Run(IReadOnlyList<string> memberDirectories, bool json, TextWriter output)
    {
        var directories = memberDirectories.Select(Path.GetFullPath).ToArray();
        var problems = new List<string>();
        var members = new List<Member>();
        var snapshots = new List<EnvironmentSnapshot>();
        try
        {
            foreach (var directory in directories)
            {
                // A branch replacement a crash interrupted: the next open of the branch completes it (this tool changes nothing).
                if (EnvironmentSnapshot.FindInterruptedReplacement(directory) is { } interrupted)
                {
                    problems.Add(interrupted.ReplacementPath is { } replacement
                        ? $"{directory}: its replacement by {replacement} was interrupted ({interrupted.IntentPath}); opening the branch completes it"
                        : interrupted.ReadError is { } readError
                            ? $"{directory}: the replacement intent {interrupted.IntentPath} cannot be read ({readError}): a replacement may be under way"
                            : $"{directory}: the replacement intent {interrupted.IntentPath} is damaged; the branch will not open until it is repaired");
                }
                var snapshot = EnvironmentSnapshot.Open(directory);
                snapshots.Add(snapshot);
            }
            var rootId = snapshots[0].Header.EnvironmentId;
            var ids = snapshots.Select(s => s.Header.EnvironmentId).ToArray();
            // The root's shared files, by its number: every member's links to them, found by comparing files.
            var rootFiles = snapshots[0].ListJournalFiles()
                .Select(f => (f.Path, Header: EnvironmentSnapshot.ReadJournalFileHeader(f.Path, out _)))
                .Where(f => f.Header is { IsShared: true })
                .ToList();
            var shared = rootFiles.Select(f => new SharedFile(Path.GetFileName(f.Path), f.Header!.LinkCount, new string[snapshots.Count], new int[snapshots.Count])).ToList();
            for (var m = 0; m < snapshots.Count; m++)
            {
                var snapshot = snapshots[m];
                var own = 0;
                var linked = 0;
                foreach (var (number, path) in snapshot.ListJournalFiles())
                {
                    if (EnvironmentSnapshot.ReadJournalFileHeader(path, out _) is not { IsShared: true } header)
                    {
                        own++;
                        continue;
                    }
                    linked++;
                    if (header.EnvironmentId != rootId)
                    {
                        problems.Add($"{snapshot.JournalDirectory}: {Path.GetFileName(path)} is a shared file written by {header.EnvironmentId:x16}, not by this group's root ({rootId:x16})");
                        continue;
                    }
                    var index = rootFiles.FindIndex(f => EnvironmentSnapshot.AreSameFile(f.Path, path));
                    if (index < 0) continue; // the root has already removed its own name of it
                    shared[index].MemberNumbers[m] = Path.GetFileNameWithoutExtension(path).TrimStart('0');
                    shared[index].MemberEntries[m] = EnvironmentSnapshot.SummarizeJournalFile(path, number, ids[m]).Entries;
                }
                var report = snapshot.Check();
                var walk = snapshot.JournalWalk;
                var recovery = walk is { IsDamaged: true } ? $"DAMAGED: {walk.DamageMessage}" : $"replays through transaction {snapshot.TransactionId}";
                if (!report.IsConsistent) problems.Add($"{snapshot.DirectoryPath}: not consistent alone ({report.ErrorCount} errors; run check on it)");
                if (walk is { IsDamaged: true }) problems.Add($"{snapshot.DirectoryPath}: {recovery}");
                members.Add(new Member(snapshot.DirectoryPath, ids[m], snapshot.Header.LastSyncedTransactionId, snapshot.TransactionId, own, linked, report.IsConsistent, recovery));
            }
            if (ids.Distinct().Count() != ids.Length) problems.Add("two members have the same environment id: one is a copy of the other, not a member of its own");

            if (json)
            {
                Output.Json(output, new { members, sharedFiles = shared, problems, consistent = problems.Count == 0 });
                return problems.Count == 0 ? Cli.Ok : Cli.Problems;
            }
            Output.Table(output, ["member", "environment", "synced tx", "last tx", "own files", "shared links", "alone"],
                members.Select((m, i) => new[]
                {
                    (i == 0 ? "root " : "branch ") + m.Directory, m.EnvironmentId.ToString("x16"), Output.N(m.SyncedTransaction), Output.N(m.LastTransaction),
                    m.OwnFiles.ToString(), m.SharedFiles.ToString(), m.Consistent ? "consistent, " + m.Recovery : "NOT consistent",
                }));
            output.WriteLine();
            Output.Table(output, ["shared file (root's name)", "links", .. members.Select((_, i) => i == 0 ? "root: number / entries" : $"branch {i}: number / entries")],
                shared.Select(f => (string[])[f.RootName, f.Links < 0 ? "-" : f.Links.ToString(), .. f.MemberNumbers.Select((n, i) => n is null ? "-" : $"{(n.Length == 0 ? "0" : n)} / {Output.N(f.MemberEntries[i])}")]));
            foreach (var problem in problems) output.WriteLine(problem);
            output.WriteLine(problems.Count == 0 ? "consistent" : $"NOT consistent: {problems.Count} problem{(problems.Count == 1 ? "" : "s")}");
            return problems.Count == 0 ? Cli.Ok : Cli.Problems;
        }
        finally
        {
            foreach (var snapshot in snapshots) snapshot.Dispose();
        }
    }
}
