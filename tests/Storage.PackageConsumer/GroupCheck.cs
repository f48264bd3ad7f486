using System.Text;
using Storage;

/// <summary>
/// An environment group through the package: a root and two branches sharing the root's journal, a commit in each, and
/// the replacement of a branch by a version built beside it. On Linux the replacement swaps the directories; where the
/// platform has no atomic exchange of two directories (Windows) it is refused before anything is closed, and the live
/// branch goes on working.
/// </summary>
internal static class GroupCheck
{
    private const string TreeName = "group";

    public static void Run(Action<bool, string> check)
    {
        var parent = Path.Combine(Path.GetTempPath(), "storage-package-group-" + Guid.NewGuid().ToString("N"));
        try
        {
            using var group = EnvironmentGroup.Open(Path.Combine(parent, "root"));
            var live = group.OpenBranch(Path.Combine(parent, "index"));
            var rebuilt = group.OpenBranch(Path.Combine(parent, "index-rebuilt"));
            Put(group.Root, "root");
            Put(live, "old");
            Put(rebuilt, "new");
            var stats = group.GetStats();
            check(stats.Members.Count == 3 && stats.SharedJournalWrites > 0,
                $"a group of a root and two branches commits through the shared journal ({stats.Members.Count} members, {stats.SharedJournalWrites} shared writes)");
            foreach (var member in stats.Members) check(member.JournalShared, $"{Path.GetFileName(member.Directory)} shares the root's journal ({member.NotSharedReason})");
            if (OperatingSystem.IsLinux())
            {
                var replaced = group.ReplaceBranch(live, rebuilt);
                check(Read(replaced) == "new" && !Directory.Exists(Path.Combine(parent, "index-rebuilt")), "the rebuilt branch replaced the live one");
                return;
            }
            try
            {
                group.ReplaceBranch(live, rebuilt);
                check(false, "replacing a branch is refused where directories cannot be exchanged atomically");
            }
            catch (StorageException e) when (e.ErrorCode == StorageErrorCode.PlatformUnavailable)
            {
            }
            Put(live, "still");
            check(Read(live) == "still" && Read(rebuilt) == "new", "both branches stay open and usable after the replacement was refused");
        }
        finally
        {
            Directory.Delete(parent, recursive: true);
        }
    }

    private static void Put(StorageEnvironment env, string value)
    {
        using var tx = env.BeginWrite();
        tx.OpenOrCreateTree(TreeName).Put("value"u8, Encoding.UTF8.GetBytes(value));
        tx.Commit();
    }

    private static string? Read(StorageEnvironment env)
    {
        using var tx = env.BeginRead();
        return tx.OpenTree(TreeName).Get("value"u8) is { } bytes ? Encoding.UTF8.GetString(bytes) : null;
    }
}
