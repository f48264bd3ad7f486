using Storage.Faults;
using Storage.Platform;
using Storage.Tests.Support;

namespace Storage.Tests.EnvironmentTests;

/// <summary>
/// An environment group with shared journals: branches' entries go into the root's journal files, which are hard-linked
/// into every member's journal folder, so each member recovers alone from its own folder after a crash of the whole group.
/// </summary>
public sealed class An_environment_group
{
    private const string Tree = "t";

    /// <summary>
    /// Small journal files: a few dozen commits move the group through several files (switches, links, end markers). Lazy
    /// commits wait for the next durable write, not for a flusher's timer, so that the tests count the writes they make.
    /// </summary>
    private static readonly StorageOptions Options = TestOptions.JournalOnly with
    {
        MinJournalFileSizeBytes = 64 << 10,
        MaxJournalFileSizeBytes = 128 << 10,
        LazyCommitDelay = TimeSpan.FromHours(1),
    };

    [Fact]
    public void Merges_members_entries_waiting_for_the_disk_into_one_durable_write()
    {
        using var temp = new TempDirectory("group");
        using var group = EnvironmentGroup.Open(temp.Combine("root"), Options);
        var a = group.OpenBranch(temp.Combine("a"), Options);
        var b = group.OpenBranch(temp.Combine("b"), Options);
        Put(group.Root, "root", 1, CommitDurability.Lazy);
        Put(a, "a", 1, CommitDurability.Lazy);
        var before = group.GetStats().SharedJournalWrites;

        // A durable commit of the second branch writes everything waiting: the root's and the first branch's entries too.
        Put(b, "b", 1, CommitDurability.Durable);

        Assert.Equal(before + 1, group.GetStats().SharedJournalWrites);
        Assert.All(new[] { group.Root, a, b }, env => Assert.Equal(1, env.GetStats().LastDurableTransactionId));
        Assert.All(group.GetStats().Members, member => Assert.True(member.JournalShared, member.NotSharedReason));
        Assert.True(b.GetStats().Journal.Shared);
    }

    [Fact]
    public void Leaves_every_member_recoverable_alone_after_a_crash_of_the_whole_group()
    {
        using var temp = new TempDirectory("group");
        var directories = new[] { temp.Combine("root"), temp.Combine("a"), temp.Combine("b"), temp.Combine("c") };
        var group = EnvironmentGroup.Open(directories[0], Options);
        var members = new List<StorageEnvironment> { group.Root };
        members.AddRange(directories.Skip(1).Select(d => group.OpenBranch(d, Options)));
        var committed = new int[members.Count];
        // Each member's thread commits at once with the others', so entries of several members share writes and files.
        Parallel.For(0, members.Count, new ParallelOptions { MaxDegreeOfParallelism = members.Count }, i =>
        {
            for (var t = 1; t <= 60; t++)
            {
                Put(members[i], $"m{i}", t, CommitDurability.Durable, valueBytes: 700 + i * 50);
                committed[i] = t;
                if (i == 1 && t % 20 == 0) members[i].Checkpoint();
            }
        });
        var stats = group.GetStats();
        Assert.True(stats.SharedJournalLinks > members.Count, $"the group moved through several files ({stats.SharedJournalLinks} links)");
        group.SimulateCrash();

        for (var i = 0; i < members.Count; i++)
        {
            using var env = StorageEnvironment.Open(directories[i], Options);
            AssertHolds(env, $"m{i}", committed[i], valueBytes: 700 + i * 50);
        }
    }

    [Fact]
    public void Lets_a_branch_be_moved_after_a_crash_and_opened_alone_elsewhere()
    {
        using var temp = new TempDirectory("group");
        // Files large enough that no member holds three of the largest and flushes: every commit must come from the links.
        var options = Options with { MaxJournalFileSizeBytes = 1 << 20 };
        var group = EnvironmentGroup.Open(temp.Combine("root"), options);
        var branch = group.OpenBranch(temp.Combine("branch"), options);
        for (var t = 1; t <= 40; t++)
        {
            Put(group.Root, "root", t, CommitDurability.Durable);
            Put(branch, "branch", t, CommitDurability.Durable);
        }
        group.SimulateCrash();
        Directory.Move(temp.Combine("branch"), temp.Combine("moved"));
        // The root's own names of the shared files go too: the branch's links keep what it needs.
        Directory.Delete(temp.Combine("root"), recursive: true);

        using var env = StorageEnvironment.Open(temp.Combine("moved"), options);
        AssertHolds(env, "branch", 40);
        Assert.Equal(40, env.GetStats().Recovery.ReplayedTransactions);
    }

    [Fact]
    public void Closes_cleanly_and_reopens_as_a_group_and_alone_many_times()
    {
        using var temp = new TempDirectory("group");
        var total = 0;
        for (var round = 0; round < 4; round++)
        {
            using (var group = EnvironmentGroup.Open(temp.Combine("root"), Options))
            {
                var a = group.OpenBranch(temp.Combine("a"), Options);
                for (var t = 1; t <= 15; t++)
                {
                    Put(group.Root, "root", total + t, CommitDurability.Durable);
                    Put(a, "a", total + t, CommitDurability.Durable);
                }
                total += 15;
                AssertHolds(a, "a", total);
            }
            // Every member's names of shared files it no longer needs are gone: a closed member keeps at most the last.
            foreach (var member in new[] { "root", "a" })
            {
                var journals = Directory.GetFiles(temp.Combine(member, "Journals"), "*.journal");
                Assert.True(journals.Length <= 2, $"{member}: {string.Join(", ", journals.Select(Path.GetFileName))}");
            }
            using (var alone = StorageEnvironment.Open(temp.Combine("a"), Options)) AssertHolds(alone, "a", total);
            using (var alone = StorageEnvironment.Open(temp.Combine("root"), Options)) AssertHolds(alone, "root", total);
        }
    }

    [Fact]
    public void Does_not_let_an_idle_branch_keep_the_groups_old_files()
    {
        using var temp = new TempDirectory("group");
        using var group = EnvironmentGroup.Open(temp.Combine("root"), Options);
        var busy = group.OpenBranch(temp.Combine("busy"), Options);
        var idle = group.OpenBranch(temp.Combine("idle"), Options);
        var fresh = group.OpenBranch(temp.Combine("fresh"), Options);
        Put(idle, "idle", 1, CommitDurability.Durable);
        idle.Checkpoint();
        // The busy branch moves the group through many files; every one is linked into the idle branches' folders too.
        for (var t = 1; t <= 150; t++)
        {
            Put(busy, "busy", t, CommitDurability.Durable, valueBytes: 2000);
            if (t % 25 == 0) busy.Checkpoint();
        }
        Assert.True(idle.GetStats().Journal.Files > 3, $"the idle branch holds {idle.GetStats().Journal.Files} links before its flusher looks");

        // What the flusher does when an environment has been idle for a flush interval.
        idle.Checkpoint();
        fresh.Checkpoint();

        foreach (var (env, name) in new[] { (idle, "idle"), (fresh, "fresh") })
        {
            Assert.Equal(1, env.GetStats().Journal.Files);
            var links = Directory.GetFiles(temp.Combine(name, "Journals"), "*.journal");
            Assert.True(links.Length == 1, $"{name}: {string.Join(", ", links.Select(Path.GetFileName))}");
        }
        group.SimulateCrash();
        using (var alone = StorageEnvironment.Open(temp.Combine("idle"), Options)) AssertHolds(alone, "idle", 1);
        using (var alone = StorageEnvironment.Open(temp.Combine("fresh"), Options)) Assert.Equal(-1, EnvHelpers.CountOf(alone, Tree));
        using (var alone = StorageEnvironment.Open(temp.Combine("busy"), Options)) AssertHolds(alone, "busy", 150, valueBytes: 2000);
    }

    [Fact]
    public void Puts_a_shared_file_every_member_is_done_with_into_use_again_and_recovers_past_its_earlier_entries()
    {
        using var temp = new TempDirectory("group");
        var directories = new[] { temp.Combine("root"), temp.Combine("a"), temp.Combine("b") };
        var group = EnvironmentGroup.Open(directories[0], Options);
        var members = new List<StorageEnvironment> { group.Root };
        members.AddRange(directories.Skip(1).Select(d => group.OpenBranch(d, Options)));
        const int Rounds = 125;
        for (var t = 1; t <= Rounds; t++)
        {
            for (var i = 0; i < members.Count; i++) Put(members[i], $"m{i}", t, CommitDurability.Durable, valueBytes: 2000);
            // Each member syncs and removes its names of the files it is done with; the last name of a file to go returns it.
            if (t % 10 == 0) members.ForEach(m => m.Checkpoint());
        }
        var stats = group.GetStats();
        Assert.True(stats.SharedJournalFilesReused >= 5, $"files reused {stats.SharedJournalFilesReused}, made {stats.SharedJournalFilesCreated}");
        Assert.True(stats.SharedJournalFilesCreated < 10, $"files made {stats.SharedJournalFilesCreated}, reused {stats.SharedJournalFilesReused}");
        // The file in use holds stale entries of every member after the present ones: its earlier use's.
        var inUse = Directory.GetFiles(Path.Combine(directories[0], "Journals"), "*.journal").Max()!;
        Assert.True(Journal.JournalFiles.ReadHeader(inUse, out _, out _) is { IsShared: true, IsRecycled: true }, $"{Path.GetFileName(inUse)} is a recycled shared file");
        group.SimulateCrash();

        for (var i = 0; i < members.Count; i++)
        {
            using var env = StorageEnvironment.Open(directories[i], Options);
            var recovery = env.GetStats().Recovery;
            Assert.Equal(Rounds % 10, recovery.ReplayedTransactions);
            Assert.False(recovery.TornTailDropped, recovery.TornTail);
            AssertHolds(env, $"m{i}", Rounds, valueBytes: 2000);
        }
    }

    [Fact]
    public void Has_each_member_flush_by_the_shared_journal_it_holds_so_that_its_files_are_reused()
    {
        using var temp = new TempDirectory("group");
        using var group = EnvironmentGroup.Open(temp.Combine("root"), Options);
        var members = new List<StorageEnvironment> { group.Root };
        for (var i = 1; i <= 3; i++) members.Add(group.OpenBranch(temp.Combine($"b{i}"), Options));
        // Each member writes about 200 KiB of entries, less than the three files' worth (384 KiB) that makes an environment
        // flush its own journal; the group writes four times that, through files each member holds a name for.
        for (var t = 1; t <= 50; t++)
        {
            for (var i = 0; i < members.Count; i++) Put(members[i], $"m{i}", t, CommitDurability.Durable, valueBytes: 2000);
        }

        // The flushes the members asked for run on their flushers: wait for them, with a deadline.
        var flushed = SpinWait.SpinUntil(() => members.All(m => m.GetStats().Flush.Count > 0), TimeSpan.FromSeconds(30));
        Assert.True(flushed, $"flushes {string.Join(", ", members.Select(m => m.GetStats().Flush.Count))}; names held {string.Join(", ", members.Select(m => m.GetStats().Journal.Files))}");

        // A file every member was done with waits for the group's next file switch.
        for (var t = 51; t <= 80; t++)
        {
            for (var i = 0; i < members.Count; i++) Put(members[i], $"m{i}", t, CommitDurability.Durable, valueBytes: 2000);
        }
        var stats = group.GetStats();
        Assert.True(stats.SharedJournalFilesReused > 0, $"files reused {stats.SharedJournalFilesReused}, made {stats.SharedJournalFilesCreated}");
        for (var i = 0; i < members.Count; i++) AssertHolds(members[i], $"m{i}", 80, valueBytes: 2000);
    }

    [Fact]
    public void Closes_its_branches_when_the_root_is_disposed()
    {
        using var temp = new TempDirectory("group");
        var group = EnvironmentGroup.Open(temp.Combine("root"), Options);
        var branch = group.OpenBranch(temp.Combine("branch"), Options);
        Put(branch, "branch", 1, CommitDurability.Durable);

        group.Root.Dispose();

        Assert.Throws<StorageException>(() => branch.BeginWrite());
        Assert.Throws<ObjectDisposedException>(() => group.OpenBranch(temp.Combine("other"), Options));
        using var alone = StorageEnvironment.Open(temp.Combine("branch"), Options);
        AssertHolds(alone, "branch", 1);
    }

    [Fact]
    public void Without_shared_journals_keeps_each_members_journal_its_own()
    {
        using var temp = new TempDirectory("group");
        using var group = EnvironmentGroup.Open(temp.Combine("root"), Options, sharedJournals: false);
        var branch = group.OpenBranch(temp.Combine("branch"), Options);
        Put(branch, "branch", 1, CommitDurability.Durable);

        Assert.False(branch.GetStats().Journal.Shared);
        Assert.Equal(0, group.GetStats().SharedJournalWrites);
        Assert.All(group.GetStats().Members, member => Assert.False(member.JournalShared));

        // Disposing the group closes its branches too, as with shared journals: the branch's directory is free again.
        group.Dispose();
        Assert.True(branch.IsDisposed);
        using var alone = StorageEnvironment.Open(temp.Combine("branch"), Options);
        AssertHolds(alone, "branch", 1);
    }

    internal static void Put(StorageEnvironment env, string name, int t, CommitDurability durability, int valueBytes = 300)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree(Tree);
        tree.Put(TestData.Key($"{name}-{t:D4}"), TestData.Value(t, valueBytes));
        tree.Put(TestData.Key("last"), TestData.Value($"{name}-{t}"));
        tx.Commit(durability);
    }

    internal static void AssertHolds(StorageEnvironment env, string name, int transactions, int valueBytes = 300)
    {
        using var tx = env.BeginRead();
        var tree = tx.OpenTree(Tree);
        Assert.Equal(TestData.Value($"{name}-{transactions}"), tree.Get(TestData.Key("last")));
        Assert.Equal(transactions + 1, tree.Count);
        for (var t = 1; t <= transactions; t++) Assert.Equal(TestData.Value(t, valueBytes), tree.Get(TestData.Key($"{name}-{t:D4}")));
    }
}

/// <summary>
/// Replacing a branch where two directories cannot exchange names in one step (Windows; a file system without
/// RENAME_EXCHANGE): an intent file beside them, made durable first, and opening either directory completes what a crash
/// interrupted.
/// </summary>
public sealed class An_environment_group_replacing_a_branch_through_an_intent_file
{
    private static readonly StorageOptions Options = TestOptions.JournalOnly with { MinJournalFileSizeBytes = 64 << 10, MaxJournalFileSizeBytes = 128 << 10 };

    private static (EnvironmentGroup Group, StorageEnvironment Live, StorageEnvironment Rebuilt) Build(TempDirectory temp, StorageOptions? options = null)
    {
        var group = EnvironmentGroup.Open(temp.Combine("root"), options ?? Options);
        group.AtomicExchangeRefused = true;
        var live = group.OpenBranch(temp.Combine("index"), options ?? Options);
        for (var t = 1; t <= 20; t++) An_environment_group.Put(live, "old", t, CommitDurability.Durable);
        var rebuilt = group.OpenBranch(temp.Combine("index.new"), options ?? Options);
        for (var t = 1; t <= 30; t++) An_environment_group.Put(rebuilt, "new", t, CommitDurability.Durable);
        return (group, live, rebuilt);
    }

    /// <summary>A replacement stopped at <paramref name="step"/> as by a crash of the whole group.</summary>
    private static void CrashAt(TempDirectory temp, string step)
    {
        var (group, live, rebuilt) = Build(temp);
        group.ReplaceStep = at =>
        {
            if (at == step) throw new InvalidOperationException("crash here");
        };
        Assert.Throws<InvalidOperationException>(() => group.ReplaceBranch(live, rebuilt));
        group.SimulateCrash();
    }

    /// <summary>Nothing of the replacement is left beside the live directory: no intent, no old version, no replacement's name.</summary>
    private static void AssertTidy(TempDirectory temp)
    {
        Assert.Equal(["index", "root"], Directory.GetFileSystemEntries(temp.Path).Select(Path.GetFileName).Order(StringComparer.Ordinal));
    }

    [Fact]
    public void Swaps_in_the_new_version_while_readers_of_the_old_keep_their_snapshot()
    {
        using var temp = new TempDirectory("group");
        var (group, live, rebuilt) = Build(temp);
        using var _ = group;
        var reader = live.BeginRead();
        var steps = new List<string>();
        group.ReplaceStep = steps.Add;

        var swapped = group.ReplaceBranch(live, rebuilt);

        Assert.Equal(["replacement closed", "live closed", "intent written", "live moved aside", "replacement moved in", "old version marked", "intent removed", "exchanged", "opened"], steps);
        Assert.Equal(temp.Combine("index"), swapped.DirectoryPath);
        An_environment_group.AssertHolds(swapped, "new", 30);
        Assert.Equal(TestData.Value("old-20"), reader.OpenTree("t").Get(TestData.Key("last")));
        Assert.Equal(21, reader.OpenTree("t").Count);
        reader.Dispose();
        AssertTidy(temp);
        An_environment_group.Put(swapped, "new", 31, CommitDurability.Durable);
        Assert.All(group.GetStats().Members, m => Assert.True(m.JournalShared));
    }

    [Theory]
    [InlineData("replacement closed", "old", "index")]
    [InlineData("live closed", "old", "index")]
    [InlineData("intent written", "new", "index")]
    [InlineData("intent written", "new", "index.new")]
    [InlineData("live moved aside", "new", "index")]
    [InlineData("live moved aside", "new", "index.new")]
    [InlineData("replacement moved in", "new", "index")]
    [InlineData("replacement moved in", "new", "index.new")]
    [InlineData("old version marked", "new", "index")]
    [InlineData("old version marked", "new", "index.new")]
    [InlineData("intent removed", "new", "index")]
    [InlineData("intent removed", "new", "index.new")]
    [InlineData("exchanged", "new", "index")]
    [InlineData("opened", "new", "index")]
    public void Crashed_at_any_step_opens_the_old_or_the_new_version_whole(string step, string expected, string openedFirst)
    {
        using var temp = new TempDirectory("group");
        CrashAt(temp, step);

        // Either directory's open finishes the replacement: the replacement's name, opened first, is then a new, empty one.
        if (openedFirst == "index.new")
        {
            using var replacementName = StorageEnvironment.Open(temp.Combine("index.new"), Options);
            using var tx = replacementName.BeginRead();
            Assert.Throws<StorageException>(() => tx.OpenTree("t"));
        }
        using (var alone = StorageEnvironment.Open(temp.Combine("index"), Options))
        {
            An_environment_group.AssertHolds(alone, expected, expected == "old" ? 20 : 30);
        }
        using var reopened = EnvironmentGroup.Open(temp.Combine("root"), Options);
        var index = reopened.OpenBranch(temp.Combine("index"), Options);
        An_environment_group.AssertHolds(index, expected, expected == "old" ? 20 : 30);
        if (expected == "new" && openedFirst == "index")
        {
            index.Dispose();
            reopened.Dispose();
            AssertTidy(temp);
        }
    }

    /// <summary>
    /// Crashed once the new version is in place and the old one marked obsolete, then the application begins its next
    /// rebuild in a folder of the replacement's name: the next open finishes the replacement that was, and never moves that
    /// folder in.
    /// </summary>
    [Theory]
    [InlineData("old version marked")]
    [InlineData("intent removed")]
    public void Crashed_after_the_old_version_was_marked_never_swaps_again_for_a_later_folder_of_the_replacements_name(string step)
    {
        using var temp = new TempDirectory("group");
        CrashAt(temp, step);
        Directory.CreateDirectory(temp.Combine("index.new"));
        using (var next = StorageEnvironment.Open(temp.Combine("index.new"), Options))
        {
            using var tx = next.BeginRead();
            Assert.Throws<StorageException>(() => tx.OpenTree("t"));
        }

        using var alone = StorageEnvironment.Open(temp.Combine("index"), Options);
        An_environment_group.AssertHolds(alone, "new", 30);
        Assert.False(File.Exists(temp.Combine("index.replacing")));
        Assert.Empty(Directory.GetDirectories(temp.Path, "index.replaced-*"));
    }

    [Fact]
    public void An_open_that_fails_while_finishing_the_replacement_leaves_it_for_the_next()
    {
        using var temp = new TempDirectory("group");
        CrashAt(temp, "intent written");
        var faults = new ScriptedFaults();
        // The sync of the folder after the open moved the live directory aside fails: the open stops there.
        faults.FailSyncs(path => path == temp.Path, ScriptedFaults.Eio);

        Assert.Throws<StorageException>(() => StorageEnvironment.Open(temp.Combine("index"), Options.WithFaults(faults)));

        Assert.Equal(1, faults.Fired);
        Assert.False(Directory.Exists(temp.Combine("index")), "the live directory was moved aside");
        using (var alone = StorageEnvironment.Open(temp.Combine("index"), Options))
        {
            An_environment_group.AssertHolds(alone, "new", 30);
        }
        AssertTidy(temp);
    }

    [Fact]
    public void A_refused_move_replaces_nothing_and_leaves_both_versions_whole()
    {
        using var temp = new TempDirectory("group");
        var (group, live, rebuilt) = Build(temp);
        using var _ = group;
        // Something else holds the name the live directory is to be moved aside to.
        var squatter = temp.Combine("index.replaced-squatter");
        Directory.CreateDirectory(squatter);
        File.WriteAllText(Path.Combine(squatter, "someone else's"), "kept");
        group.ReplaceAsideName = "index.replaced-squatter";

        var error = Assert.Throws<StorageException>(() => group.ReplaceBranch(live, rebuilt));

        Assert.Equal(StorageErrorCode.IoFailure, error.ErrorCode);
        Assert.False(File.Exists(temp.Combine("index.replacing")), "no intent is left for a replacement that did not happen");
        Assert.Equal("kept", File.ReadAllText(Path.Combine(squatter, "someone else's")));
        using var old = StorageEnvironment.Open(temp.Combine("index"), Options);
        An_environment_group.AssertHolds(old, "old", 20);
        using var rebuiltAgain = StorageEnvironment.Open(temp.Combine("index.new"), Options);
        An_environment_group.AssertHolds(rebuiltAgain, "new", 30);
        Assert.True(Directory.Exists(squatter), "a folder not marked as a replaced version of the branch is not deleted");
    }

    [Fact]
    public void An_open_while_another_holds_the_intent_moves_nothing_and_says_so()
    {
        using var temp = new TempDirectory("group");
        CrashAt(temp, "intent written");
        var before = Directory.GetFileSystemEntries(temp.Path).Order(StringComparer.Ordinal).ToArray();
        // Another process (or thread) completing the replacement holds the intent.
        using (File.Open(temp.Combine("index.replacing"), FileMode.Open, FileAccess.ReadWrite, OperatingSystem.IsWindows() ? FileShare.Delete : FileShare.None))
        {
            foreach (var name in new[] { "index", "index.new" })
            {
                var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(temp.Combine(name), Options));
                Assert.Equal(StorageErrorCode.EnvironmentLocked, error.ErrorCode);
            }
            Assert.Equal(before, Directory.GetFileSystemEntries(temp.Path).Order(StringComparer.Ordinal).ToArray());
        }
        using var index = StorageEnvironment.Open(temp.Combine("index"), Options);
        An_environment_group.AssertHolds(index, "new", 30);
    }

    [Fact]
    public void Deletes_only_old_versions_marked_as_the_branchs_own()
    {
        using var temp = new TempDirectory("group");
        var (group, _, _) = Build(temp);
        group.Dispose();
        // One replaced version that could not be deleted at the time (marked), and look-alikes that are not provably ours.
        foreach (var (name, marker) in new[] { ("index.replaced-0000aaaa", "replaced by index\n"), ("index.replaced-0000bbbb", null), ("index.replaced-0000cccc", "replaced by other\n") })
        {
            Directory.CreateDirectory(temp.Combine(name));
            File.WriteAllText(temp.Combine(name, "data.storage"), "old pages");
            if (marker is not null) File.WriteAllText(temp.Combine(name, Storage.Groups.BranchReplacement.ObsoleteMarker), marker);
        }

        using (var index = StorageEnvironment.Open(temp.Combine("index"), Options))
        {
            An_environment_group.AssertHolds(index, "old", 20);
        }

        Assert.False(Directory.Exists(temp.Combine("index.replaced-0000aaaa")));
        Assert.True(Directory.Exists(temp.Combine("index.replaced-0000bbbb")));
        Assert.True(Directory.Exists(temp.Combine("index.replaced-0000cccc")));
    }

    [Fact]
    public void A_damaged_intent_refuses_the_open_and_moves_nothing()
    {
        using var temp = new TempDirectory("group");
        CrashAt(temp, "live moved aside");
        var intent = temp.Combine("index.replacing");
        var bytes = File.ReadAllBytes(intent);
        bytes[bytes.Length / 2] ^= 0x20;
        File.WriteAllBytes(intent, bytes);
        var before = Directory.GetFileSystemEntries(temp.Path).Order(StringComparer.Ordinal).ToArray();

        Assert.Throws<StorageCorruptedException>(() => StorageEnvironment.Open(temp.Combine("index"), Options));

        Assert.Equal(before, Directory.GetFileSystemEntries(temp.Path).Order(StringComparer.Ordinal).ToArray());
        Assert.False(Directory.Exists(temp.Combine("index")), "no empty environment was made in the live directory's place");
    }

    [Fact]
    public void An_intent_whose_directories_no_replacement_leaves_refuses_the_open()
    {
        using var temp = new TempDirectory("group");
        CrashAt(temp, "live moved aside");
        // The replacement is gone (deleted by hand): the old version, moved aside, is all there is, and stays where it is.
        Directory.Delete(temp.Combine("index.new"), recursive: true);

        Assert.Throws<StorageCorruptedException>(() => StorageEnvironment.Open(temp.Combine("index"), Options));

        Assert.False(Directory.Exists(temp.Combine("index")));
        Assert.True(File.Exists(temp.Combine("index.replacing")));
        Assert.Single(Directory.GetDirectories(temp.Path, "index.replaced-*"));
    }
}

/// <summary>A branch whose folder refuses the hard link (as another file system would) keeps a journal of its own.</summary>
[Collection(ProcessWideFaultSeam.Name)]
public sealed class An_environment_group_whose_branch_refuses_links
{
    private static readonly StorageOptions Options = TestOptions.JournalOnly with { MinJournalFileSizeBytes = 64 << 10, MaxJournalFileSizeBytes = 128 << 10 };

    [FactNeeding(Need.NativeLayer, "The hard-link fault seam")]
    public void Falls_back_to_the_branchs_own_journal_and_says_so()
    {
        using var temp = new TempDirectory("group");
        using (var group = EnvironmentGroup.Open(temp.Combine("root"), Options))
        {
            const int CrossDevice = 18;
            PalFaults.Arm(PalFaultRule.Fail(PalFaultKind.HardLink, nth: 1, error: CrossDevice));
            StorageEnvironment branch;
            try
            {
                branch = group.OpenBranch(temp.Combine("branch"), Options);
            }
            finally
            {
                PalFaults.Disarm();
            }
            var shared = group.OpenBranch(temp.Combine("shared"), Options);
            for (var t = 1; t <= 30; t++)
            {
                An_environment_group.Put(branch, "branch", t, CommitDurability.Durable);
                An_environment_group.Put(shared, "shared", t, CommitDurability.Durable);
            }

            Assert.False(branch.GetStats().Journal.Shared);
            Assert.True(shared.GetStats().Journal.Shared);
            var member = group.GetStats().Members.Single(m => m.Directory == branch.DirectoryPath);
            Assert.False(member.JournalShared);
            Assert.Contains("hard-link", member.NotSharedReason);
            Assert.All(Directory.GetFiles(temp.Combine("branch", "Journals"), "*.journal"), file => Assert.Equal(1u, Posix.LinkCount(file)));
            group.SimulateCrash();
        }
        using var alone = StorageEnvironment.Open(temp.Combine("branch"), Options);
        An_environment_group.AssertHolds(alone, "branch", 30);
        using var sharedAlone = StorageEnvironment.Open(temp.Combine("shared"), Options);
        An_environment_group.AssertHolds(sharedAlone, "shared", 30);
    }
}

/// <summary>A failed durable write of the group's shared journal fails the members whose entries it carried and poisons every member.</summary>
public sealed class An_environment_group_whose_shared_journal_write_fails
{
    [Fact]
    public void Fails_the_commits_in_it_poisons_every_member_and_each_member_reopens_with_every_earlier_commit()
    {
        using var temp = new TempDirectory("group");
        var faults = new ScriptedFaults();
        // The root's options carry the fault injector: the shared journal writes through it.
        // Lazy commits wait for b's durable write, not for a flusher's timer, which would meet the fault first.
        var memberOptions = TestOptions.JournalOnly with { LazyCommitDelay = TimeSpan.FromHours(1) };
        var rootOptions = (memberOptions with { JournalWriteMethod = JournalWriteMethod.DirectSync }).WithFaults(faults);
        var group = EnvironmentGroup.Open(temp.Combine("root"), rootOptions);
        var a = group.OpenBranch(temp.Combine("a"), memberOptions);
        var b = group.OpenBranch(temp.Combine("b"), memberOptions);
        var members = new[] { group.Root, a, b };
        for (var t = 1; t <= 5; t++)
        {
            foreach (var (env, i) in members.Select((env, i) => (env, i))) An_environment_group.Put(env, $"m{i}", t, CommitDurability.Durable);
        }
        // The root's and a's next commits wait (lazily) for the write that fails with b's.
        An_environment_group.Put(group.Root, "m0", 6, CommitDurability.Lazy);
        An_environment_group.Put(a, "m1", 6, CommitDurability.Lazy);

        faults.FailWrites((path, _, _) => ScriptedFaults.IsJournal(path), ScriptedFaults.Eio, thisThreadOnly: false);
        var error = Assert.Throws<StorageException>(() => An_environment_group.Put(b, "m2", 6, CommitDurability.Durable));
        Assert.Equal(StorageErrorCode.IoFailure, error.ErrorCode);
        Assert.Equal(5, error.OsError);
        Assert.Equal(1, faults.Fired);

        foreach (var env in members)
        {
            Assert.Equal(StorageErrorCode.EnvironmentPoisoned, Assert.Throws<StorageException>(() => env.BeginWrite()).ErrorCode);
        }
        group.SimulateCrash();
        for (var i = 0; i < members.Length; i++)
        {
            using var alone = StorageEnvironment.Open(temp.Combine(i == 0 ? "root" : i == 1 ? "a" : "b"), TestOptions.Small);
            // Transaction 6 was in the failed write: whether it reached the disk is unknown, and a lazy commit may keep it.
            using var tx = alone.BeginRead();
            var last = tx.OpenTree("t").Get(TestData.Key("last"));
            Assert.True(last.AsSpan().SequenceEqual(TestData.Value($"m{i}-5")) || (i < 2 && last.AsSpan().SequenceEqual(TestData.Value($"m{i}-6"))), $"member {i}");
            for (var t = 1; t <= 5; t++) Assert.Equal(TestData.Value(t, 300), tx.OpenTree("t").Get(TestData.Key($"m{i}-{t:D4}")));
        }
    }
}

/// <summary>A new version of a branch built beside the live one and put in its place.</summary>
public sealed class An_environment_group_replacing_a_branch
{
    private static readonly StorageOptions Options = TestOptions.JournalOnly with { MinJournalFileSizeBytes = 64 << 10, MaxJournalFileSizeBytes = 128 << 10 };

    [FactNeeding(Need.Linux, "An atomic exchange of two directories (renameat2)")]
    public void Swaps_in_the_new_version_while_readers_of_the_old_keep_their_snapshot()
    {
        using var temp = new TempDirectory("group");
        using var group = EnvironmentGroup.Open(temp.Combine("root"), Options);
        var live = group.OpenBranch(temp.Combine("index"), Options);
        for (var t = 1; t <= 20; t++) An_environment_group.Put(live, "old", t, CommitDurability.Durable);
        var rebuilt = group.OpenBranch(temp.Combine("index.new"), Options);
        for (var t = 1; t <= 30; t++) An_environment_group.Put(rebuilt, "new", t, CommitDurability.Durable);
        An_environment_group.Put(group.Root, "root", 1, CommitDurability.Durable);
        var reader = live.BeginRead();
        Assert.Throws<ArgumentException>(() => group.ReplaceBranch(live, group.Root));
        Assert.Throws<ArgumentException>(() => group.ReplaceBranch(group.Root, rebuilt));

        var swapped = group.ReplaceBranch(live, rebuilt);

        Assert.Equal(temp.Combine("index"), swapped.DirectoryPath);
        An_environment_group.AssertHolds(swapped, "new", 30);
        // The old version's reader still reads what it read, whole.
        Assert.Equal(TestData.Value("old-20"), reader.OpenTree("t").Get(TestData.Key("last")));
        Assert.Equal(21, reader.OpenTree("t").Count);
        reader.Dispose();
        Assert.False(Directory.Exists(temp.Combine("index.new")), "the old version, moved aside, is deleted");
        An_environment_group.Put(swapped, "new", 31, CommitDurability.Durable);
        An_environment_group.AssertHolds(group.Root, "root", 1);
        Assert.Equal(2, group.GetStats().Members.Count);
        Assert.All(group.GetStats().Members, m => Assert.True(m.JournalShared));
    }

    [TheoryNeeding(Need.Linux, "An atomic exchange of two directories (renameat2)")]
    [InlineData("replacement closed", "old")]
    [InlineData("live closed", "old")]
    [InlineData("exchanged", "new")]
    [InlineData("opened", "new")]
    public void Crashed_at_any_step_leaves_the_old_or_the_new_version_whole(string step, string expected)
    {
        using var temp = new TempDirectory("group");
        var group = EnvironmentGroup.Open(temp.Combine("root"), Options);
        var live = group.OpenBranch(temp.Combine("index"), Options);
        for (var t = 1; t <= 20; t++) An_environment_group.Put(live, "old", t, CommitDurability.Durable);
        var rebuilt = group.OpenBranch(temp.Combine("index.new"), Options);
        for (var t = 1; t <= 30; t++) An_environment_group.Put(rebuilt, "new", t, CommitDurability.Durable);
        group.ReplaceStep = at =>
        {
            if (at == step) throw new InvalidOperationException("crash here");
        };

        Assert.Throws<InvalidOperationException>(() => group.ReplaceBranch(live, rebuilt));
        group.SimulateCrash();

        using var reopened = EnvironmentGroup.Open(temp.Combine("root"), Options);
        var index = reopened.OpenBranch(temp.Combine("index"), Options);
        An_environment_group.AssertHolds(index, expected, expected == "old" ? 20 : 30);
    }
}
