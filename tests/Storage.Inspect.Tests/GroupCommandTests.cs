using System.Text.Json;
using static Storage.Inspect.Tests.TestEnvironments;

namespace Storage.Inspect.Tests;

public class GroupCommandTests
{
    /// <summary>
    /// Small first files, so that the group goes through several; a maximum large enough that no member holds three maximum
    /// files' worth of the group's files (which would make it flush and sync).
    /// </summary>
    private static readonly StorageOptions Options = new()
    {
        MinJournalFileSizeBytes = 64 << 10,
        MaxJournalFileSizeBytes = 1 << 20,
        FlushInterval = TimeSpan.FromMilliseconds(600_000),
        SyncInterval = TimeSpan.FromMilliseconds(600_000),
    };

    /// <summary>A group left by a crash: the root and two branches committed into shared files, nothing synced.</summary>
    private static void CreateCrashedGroup(TempDir dir)
    {
        var group = EnvironmentGroup.Open(dir.Sub("root"), Options);
        var members = new[] { group.Root, group.OpenBranch(dir.Sub("a"), Options), group.OpenBranch(dir.Sub("b"), Options) };
        for (var t = 0; t < 30; t++)
        {
            foreach (var env in members)
            {
                using var tx = env.BeginWrite();
                tx.OpenOrCreateTree("t").Put(BitConverter.GetBytes(t), new byte[500]);
                tx.Commit();
            }
        }
        group.SimulateCrash();
    }

    [Fact]
    public void Group_shows_members_shared_files_links_and_entries_and_checks_each_member()
    {
        using var dir = new TempDir();
        CreateCrashedGroup(dir);

        Assert.Equal(0, Run(out var text, out var err, "group", dir.Sub("root"), dir.Sub("a"), dir.Sub("b")));

        Assert.Equal("", err);
        Assert.Contains("root " + dir.Sub("root"), text);
        Assert.Contains("branch " + dir.Sub("a"), text);
        Assert.Contains("replays through transaction 30", text);
        Assert.EndsWith("consistent" + Environment.NewLine, text);
        Assert.Equal(0, Run(out var json, out _, "group", "--json", dir.Sub("root"), dir.Sub("a"), dir.Sub("b")));
        using var doc = JsonDocument.Parse(json);
        var files = doc.RootElement.GetProperty("sharedFiles").EnumerateArray().ToList();
        Assert.True(files.Count >= 2, "the group went through several shared files");
        // Every shared file is linked into all three folders, and all of them hold entries of every member.
        Assert.All(files, f => Assert.Equal(3, f.GetProperty("links").GetInt64()));
        Assert.Equal(30 * 3, files.Sum(f => f.GetProperty("memberEntries").EnumerateArray().Sum(e => e.GetInt32())));
    }

    [Fact]
    public void Group_finds_a_copy_posing_as_a_member()
    {
        using var dir = new TempDir();
        CreateCrashedGroup(dir);
        CopyDirectory(dir.Sub("a"), dir.Sub("copy"));

        Assert.Equal(1, Run(out var text, out _, "group", dir.Sub("root"), dir.Sub("a"), dir.Sub("copy")));

        Assert.Contains("two members have the same environment id", text);
        Assert.Contains("NOT consistent", text);
    }

    [Fact]
    public void Group_reports_an_interrupted_branch_replacement_and_leaves_it_for_the_engine()
    {
        using var dir = new TempDir();
        var group = EnvironmentGroup.Open(dir.Sub("root"), Options);
        group.AtomicExchangeRefused = true;
        var live = group.OpenBranch(dir.Sub("index"), Options);
        var rebuilt = group.OpenBranch(dir.Sub("index.new"), Options);
        foreach (var env in new[] { live, rebuilt })
        {
            using var tx = env.BeginWrite();
            tx.OpenOrCreateTree("t").Put("k"u8, "v"u8);
            tx.Commit();
        }
        group.ReplaceStep = at =>
        {
            if (at == "intent written") throw new InvalidOperationException("crash here");
        };
        Assert.Throws<InvalidOperationException>(() => group.ReplaceBranch(live, rebuilt));
        group.SimulateCrash();
        var before = Directory.GetFileSystemEntries(dir.Path).Order(StringComparer.Ordinal).ToArray();

        Assert.Equal(1, Run(out var text, out _, "group", dir.Sub("root"), dir.Sub("index")));

        Assert.Contains($"its replacement by {dir.Sub("index.new")} was interrupted", text);
        Assert.Contains("NOT consistent", text);
        Assert.Equal(before, Directory.GetFileSystemEntries(dir.Path).Order(StringComparer.Ordinal).ToArray());
    }

    private static void CopyDirectory(string from, string to)
    {
        Directory.CreateDirectory(to);
        foreach (var file in Directory.GetFiles(from)) File.Copy(file, Path.Combine(to, Path.GetFileName(file)));
        foreach (var sub in Directory.GetDirectories(from)) CopyDirectory(sub, Path.Combine(to, Path.GetFileName(sub)));
    }
}
