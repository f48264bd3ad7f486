using System.Text;
using Storage;

/// <summary>
/// An environment group through the package: a root and two branches sharing the root's journal, a commit in each, and
/// the replacement of a branch by a version built beside it (on Linux by one atomic exchange of the two directories; on
/// Windows through an intent file and two moves).
/// </summary>
internal static class GroupCheck
{
    private const string TreeName = "group";

    public static void Run(Action<bool, string> check)
    {
        var parent = Path.Combine(Path.GetTempPath(), "storage-package-group-" + Guid.NewGuid().ToString("N"));
        try
        {
            var group = EnvironmentGroup.Open(Path.Combine(parent, "root"));
            var live = group.OpenBranch(Path.Combine(parent, "index"));
            var rebuilt = group.OpenBranch(Path.Combine(parent, "index-rebuilt"));
            Put(group.Root, "root");
            Put(live, "old");
            Put(rebuilt, "new");
            var stats = group.GetStats();
            check(stats.Members.Count == 3 && stats.SharedJournalWrites > 0,
                $"a group of a root and two branches commits through the shared journal ({stats.Members.Count} members, {stats.SharedJournalWrites} shared writes)");
            foreach (var member in stats.Members) check(member.JournalShared, $"{Path.GetFileName(member.Directory)} shares the root's journal ({member.NotSharedReason})");
            var replaced = group.ReplaceBranch(live, rebuilt);
            check(Read(replaced) == "new" && replaced.DirectoryPath == Path.Combine(parent, "index"), "the rebuilt branch replaced the live one");
            Put(replaced, "newer");
            check(Read(replaced) == "newer", "the replaced branch commits");
            // On Windows the old version's link to the shared journal file in use cannot be deleted until the group closes it.
            group.Dispose();
            check(Directory.GetFileSystemEntries(parent).Select(Path.GetFileName).Order(StringComparer.Ordinal).SequenceEqual(["index", "root"]),
                $"nothing of the replacement is left beside the branch once the group is closed ({string.Join(", ", Directory.GetFileSystemEntries(parent).Select(Path.GetFileName))})");
            using var reopened = StorageEnvironment.Open(Path.Combine(parent, "index"));
            check(Read(reopened) == "newer", "the replaced branch opens alone with its last commit");
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
