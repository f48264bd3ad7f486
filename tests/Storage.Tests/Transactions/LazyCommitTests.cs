using System.Diagnostics;
using Storage.Recovery;
using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.TransactionsTests;

public sealed class A_lazy_commit
{
    /// <summary>Lazy entries are never written by time in these tests: only a durable commit, a checkpoint or dispose writes them.</summary>
    private static StorageOptions Waiting => TestOptions.Small with { LazyCommitDelay = TimeSpan.FromHours(1) };

    [Fact]
    public void Is_visible_at_once_and_becomes_durable_with_the_next_durable_commit_in_one_write()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, Waiting);
        PutAndCommit(env, "t", ("a", "durable"));
        var before = env.GetStats();

        var first = Commit(env, CommitDurability.Lazy, ("b", "lazy 1"));
        var second = Commit(env, CommitDurability.Lazy, ("c", "lazy 2"));
        Assert.False(first.IsDurable);
        Assert.False(second.IsDurable);
        Assert.Equal("lazy 2", GetString(env, "t", "c"));
        var waiting = env.GetStats();
        Assert.Equal(second.TransactionId, waiting.LastTransactionId);
        Assert.Equal(before.LastTransactionId, waiting.LastDurableTransactionId);
        Assert.Equal(before.Journal.Writes, waiting.Journal.Writes);

        var third = Commit(env, CommitDurability.Durable, ("d", "durable 2"));
        Assert.True(third.IsDurable);
        var after = env.GetStats();
        Assert.Equal(third.TransactionId, after.LastDurableTransactionId);
        Assert.Equal(before.Journal.Writes + 1, after.Journal.Writes);
    }

    [Fact]
    public void Is_lost_in_a_crash_before_it_is_written_and_nothing_before_it_is()
    {
        using var dir = new TempDirectory();
        var env = StorageEnvironment.Open(dir.Path, Waiting);
        PutAndCommit(env, "t", ("a", "durable"));
        Commit(env, CommitDurability.Lazy, ("a", "lazy"), ("b", "lazy"));
        env.SimulateCrash();

        using var reopened = StorageEnvironment.Open(dir.Path, Waiting);
        Assert.Equal("durable", GetString(reopened, "t", "a"));
        Assert.Null(GetString(reopened, "t", "b"));
    }

    [Theory]
    [InlineData("durable commit")]
    [InlineData("checkpoint")]
    [InlineData("dispose")]
    public void Survives_a_crash_once_written(string by)
    {
        using var dir = new TempDirectory();
        var env = StorageEnvironment.Open(dir.Path, Waiting);
        Commit(env, CommitDurability.Lazy, ("a", "lazy 1"));
        Commit(env, CommitDurability.Lazy, ("b", "lazy 2"));
        switch (by)
        {
            case "durable commit": PutAndCommit(env, "t", ("c", "durable")); break;
            case "checkpoint": env.Checkpoint(); break;
            default: env.Dispose(); break;
        }
        if (by != "dispose") env.SimulateCrash();

        using var reopened = StorageEnvironment.Open(dir.Path, Waiting);
        Assert.Equal("lazy 1", GetString(reopened, "t", "a"));
        Assert.Equal("lazy 2", GetString(reopened, "t", "b"));
    }

    [Fact]
    public void Is_written_by_the_background_within_the_configured_delay()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, TestOptions.Small with { LazyCommitDelay = TimeSpan.FromMilliseconds(20), FlushInterval = TimeSpan.FromMilliseconds(60_000) });
        var lazy = Commit(env, CommitDurability.Lazy, ("a", "lazy"));
        var deadline = Stopwatch.StartNew();
        while (env.GetStats().LastDurableTransactionId < lazy.TransactionId)
        {
            Assert.True(deadline.Elapsed < TimeSpan.FromSeconds(30), "the lazy entry was never written");
            Thread.Yield();
        }
        env.SimulateCrash();
        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        Assert.Equal("lazy", GetString(reopened, "t", "a"));
    }

    [Fact]
    public void Is_written_by_the_background_once_enough_entries_wait_however_long_the_delay()
    {
        using var dir = new TempDirectory();
        // One journal file takes every entry: no file switch writes them either.
        var options = Waiting with { MinJournalFileSizeBytes = 32 << 20, MaxJournalFileSizeBytes = 32 << 20 };
        using var env = StorageEnvironment.Open(dir.Path, options);
        PutAndCommit(env, "t", ("a", "durable"));
        // Random values do not compress: each entry holds its value whole.
        var value = new byte[60_000];
        Random.Shared.NextBytes(value);
        var first = 0L;
        for (var written = 0L; written < 2 * Storage.Flush.Flusher.LazyWriteBytes; written += value.Length)
        {
            using var tx = env.BeginWrite();
            tx.OpenTree("t").Put(TestData.Key($"lazy {written}"), value);
            var stats = tx.Commit(CommitDurability.Lazy);
            Assert.False(stats.IsDurable);
            if (first == 0) first = stats.TransactionId;
        }
        // Nothing but the size of the entries waiting can have the background write them: the delay is an hour.
        var deadline = Stopwatch.StartNew();
        while (env.GetStats().LastDurableTransactionId < first)
        {
            Assert.True(deadline.Elapsed < TimeSpan.FromSeconds(30), "lazy entries past the size were never written");
            Thread.Yield();
        }
        env.SimulateCrash();
        using var reopened = StorageEnvironment.Open(dir.Path, Waiting);
        using var read = reopened.BeginRead();
        Assert.Equal(value, read.OpenTree("t").Get(TestData.Key("lazy 0")));
    }

    [Fact]
    public void Keeps_the_durable_version_of_a_page_a_waiting_lazy_commit_changed_for_a_flush_meanwhile()
    {
        using var dir = new TempDirectory();
        var env = StorageEnvironment.Open(dir.Path, Waiting);
        PutAndCommit(env, "t", ("a", "first"));
        env.Checkpoint();
        PutAndCommit(env, "t", ("a", "durable"));
        Commit(env, CommitDurability.Lazy, ("a", "lazy"));
        // The flush may write only up to the durable commit: the version it must write is the one the lazy commit replaced.
        env.FlushAsTheBackgroundWould();
        env.SimulateCrash();

        using var reopened = StorageEnvironment.Open(dir.Path, Waiting);
        Assert.Equal("durable", GetString(reopened, "t", "a"));
    }

    /// <summary>
    /// A durable commit's journal write is held in flight while a lazy commit changes the same page and is published
    /// (with the durable one under it). Once the write ends, the flusher has the durable commit but not the lazy one: its
    /// flush must find the page's version of the durable commit, which the lazy commit superseded while it was still
    /// waiting for its write.
    /// </summary>
    [Fact]
    public async Task Keeps_the_version_of_a_commit_whose_write_is_under_way_when_a_lazy_commit_supersedes_it()
    {
        using var dir = new TempDirectory();
        var gate = new GatedJournalWrites();
        var env = StorageEnvironment.Open(dir.Path, gate.Options with { LazyCommitDelay = TimeSpan.FromHours(1) });
        PutAndCommit(env, "t", ("a", "first"));
        env.Checkpoint();

        gate.Arm();
        var durable = Task.Run(() => Commit(env, CommitDurability.Durable, ("a", "durable")));
        gate.WaitUntilHeld();
        Assert.Equal(1, env.Journal.WritesUnderWay);
        var lazy = Commit(env, CommitDurability.Lazy, ("a", "lazy"));
        Assert.False(lazy.IsDurable);
        Assert.Equal("lazy", GetString(env, "t", "a"));
        // A commit after it prunes again, with the lazy one published and the durable one's write still under way.
        Commit(env, CommitDurability.Lazy, ("b", "lazy"));
        gate.Release();
        var durableStats = await durable;
        Assert.True(durableStats.IsDurable);
        Assert.Equal(durableStats.TransactionId, env.Commits.Versions.HandedToFlusher);

        // The flush aims at the durable commit: the page as that commit left it.
        using var reopened = FlushToCrashAndReopen(env, dir.Path, durableStats.TransactionId);
        Assert.Equal("durable", GetString(reopened, "t", "a"));
        Assert.Null(GetString(reopened, "t", "b"));
    }

    /// <summary>
    /// A write takes a lazy commit's entry between its append and the queueing of its record for the flusher, so that
    /// write's publishing misses it: the commit hands itself over, or with no later write the flusher would never have it.
    /// </summary>
    [Fact]
    public void Written_between_its_append_and_its_record_is_still_handed_to_the_flusher()
    {
        using var dir = new TempDirectory();
        WritingAppendJournal? journal = null;
        var env = EnvironmentOpener.Open(dir.Path, Waiting, context => journal = WritingAppendJournal.Create(context));
        PutAndCommit(env, "t", ("a", "durable"));

        journal!.WriteOnNextAppend();
        var lazy = Commit(env, CommitDurability.Lazy, ("a", "lazy"));
        Assert.Equal(lazy.TransactionId, env.Journal.DurableTransactionId);
        Assert.Equal(lazy.TransactionId, env.Commits.Versions.HandedToFlusher);
        using var reopened = FlushToCrashAndReopen(env, dir.Path, lazy.TransactionId);
        Assert.Equal("lazy", GetString(reopened, "t", "a"));
    }

    /// <summary>A flush as the background's, which must sync up to <paramref name="flushedUpTo"/>; then a crash, and the environment reopened.</summary>
    private static StorageEnvironment FlushToCrashAndReopen(StorageEnvironment env, string directory, long flushedUpTo)
    {
        env.FlushAsTheBackgroundWould();
        Assert.Equal(flushedUpTo, env.GetStats().LastSyncedTransactionId);
        env.SimulateCrash();
        return StorageEnvironment.Open(directory, TestOptions.Small);
    }

    /// <summary>
    /// Many commits, lazy and durable, over few pages (so later ones supersede the page versions of earlier ones), with
    /// checkpoints flushing while lazy entries wait, then a crash: the state reopened is exactly the one after the last
    /// commit that was made durable, and the data file was never written ahead of the journal.
    /// </summary>
    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public void Mixed_with_durable_commits_and_checkpoints_leaves_exactly_the_last_durable_state_after_a_crash(int seed)
    {
        using var dir = new TempDirectory();
        var random = new Random(seed);
        // The flusher flushes and syncs as often as it can, while lazy entries wait (they are written by commits only).
        var env = StorageEnvironment.Open(dir.Path, TestOptions.Busy with { LazyCommitDelay = TimeSpan.FromHours(1) });
        var model = new SortedDictionary<string, string>(StringComparer.Ordinal);
        var durableModel = new SortedDictionary<string, string>(StringComparer.Ordinal);
        using var reader = new Holder();
        for (var t = 0; t < 600; t++)
        {
            var durability = random.Next(4) == 0 ? CommitDurability.Durable : CommitDurability.Lazy;
            using (var tx = env.BeginWrite())
            {
                var tree = tx.OpenOrCreateTree("t");
                for (var i = random.Next(1, 8); i > 0; i--)
                {
                    var key = $"k{random.Next(60):D3}";
                    var value = $"{t}-{new string('v', random.Next(10, 1500))}";
                    tree.Put(TestData.Key(key), TestData.Value(value));
                    model[key] = value;
                }
                tx.Commit(durability);
            }
            if (durability == CommitDurability.Durable) durableModel = new(model, StringComparer.Ordinal);
            var action = random.Next(20);
            if (action == 0)
            {
                env.Checkpoint();
                durableModel = new(model, StringComparer.Ordinal);
            }
            else if (action == 1)
            {
                // A reader pins a snapshot for a while, so flushes stop short of the newest state.
                reader.Replace(env.BeginRead());
            }
            else if (action == 2)
            {
                reader.Replace(null);
            }
            else if (action < 8)
            {
                // What the flusher does on its own, at a moment when lazy entries wait.
                env.FlushAsTheBackgroundWould();
            }
        }
        reader.Replace(null);
        env.SimulateCrash();

        using (var reopened = StorageEnvironment.Open(dir.Path, Waiting))
        {
            using var read = reopened.BeginRead();
            var tree = read.OpenTree("t");
            foreach (var (key, value) in durableModel) Assert.Equal(value, System.Text.Encoding.UTF8.GetString(tree.Get(TestData.Key(key))!));
            Assert.Equal(durableModel.Count, CountOf(reopened, "t"));
        }
        var check = Storage.Inspection.EnvironmentSnapshot.Check(dir.Path);
        Assert.True(check.IsConsistent, string.Join("; ", check.Problems));
    }

    private static CommitStats Commit(StorageEnvironment env, CommitDurability durability, params (string Key, string Value)[] entries)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("t");
        foreach (var (key, value) in entries) tree.Put(TestData.Key(key), TestData.Value(value));
        return tx.Commit(durability);
    }

    /// <summary>
    /// Until a lazy commit is durable, each page it changed keeps the version it had at the durable point as well (the
    /// flusher may write only up to that point). Once the journal is durable past it, the next commit gives those versions
    /// back, whether or not the pages change again: a bulk load of lazy commits would otherwise hold two of every page.
    /// </summary>
    [Fact]
    public void Gives_back_the_versions_kept_for_the_durable_point_once_it_is_written()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, TestOptions.JournalOnly with { LazyCommitDelay = TimeSpan.FromHours(1) });
        const int keys = 3_000;
        using (var tx = env.BeginWrite())
        {
            var tree = tx.OpenOrCreateTree("t");
            for (var i = 0; i < keys; i++) tree.Put(TestData.Key($"k{i:D5}"), TestData.Value(i, 100));
            tx.Commit();
        }
        var filled = env.Scratch.BytesInUse;

        // One key in every few: every leaf changes, lazily.
        CommitStats lazy;
        using (var tx = env.BeginWrite())
        {
            var tree = tx.OpenTree("t");
            for (var i = 0; i < keys; i += 20) tree.Put(TestData.Key($"k{i:D5}"), TestData.Value(-i - 1, 100));
            lazy = tx.Commit(CommitDurability.Lazy);
        }
        var kept = env.Scratch.BytesInUse - filled;
        Assert.True(lazy.LeafPages >= 30, $"{lazy.LeafPages} leaves changed");
        Assert.True(kept >= lazy.LeafPages * 8192L, $"{kept:N0} more bytes of scratch for {lazy.LeafPages} leaves kept twice");

        // A durable commit elsewhere writes the lazy entry; the commit after it prunes.
        Commit(env, CommitDurability.Durable, ("other-1", "x"));
        Assert.True(env.GetStats().LastDurableTransactionId > lazy.TransactionId);
        Commit(env, CommitDurability.Lazy, ("other-2", "x"));

        var left = env.Scratch.BytesInUse - filled;
        Assert.True(left <= kept - lazy.LeafPages * 8192L + 16 * 8192L,
            $"{left:N0} bytes of scratch over the fill's after the durable point passed the lazy commit ({kept:N0} while it was kept, {lazy.LeafPages} leaves)");
        for (var i = 0; i < keys; i += 20) Assert.Equal(TestData.Value(-i - 1, 100), GetBytes(env, $"k{i:D5}"));
    }

    private static byte[]? GetBytes(StorageEnvironment env, string key)
    {
        using var tx = env.BeginRead();
        return tx.OpenTree("t").Get(TestData.Key(key));
    }

    private sealed class Holder : IDisposable
    {
        private ReadTransaction? _held;

        public void Replace(ReadTransaction? next)
        {
            _held?.Dispose();
            _held = next;
        }

        public void Dispose() => Replace(null);
    }
}
