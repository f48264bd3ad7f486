using System.Collections.Concurrent;
using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.TransactionsTests;

public sealed class Group_commit
{
    [Fact]
    public async Task The_next_transaction_builds_on_a_commit_whose_write_is_in_flight_and_readers_see_both_only_once_durable()
    {
        using var dir = new TempDirectory();
        var gate = new GatedJournalWrites();
        var env = StorageEnvironment.Open(dir.Path, gate.Options);
        PutAndCommit(env, "t", ("before", "0"));
        var writesBefore = env.GetStats().Journal.Writes;

        gate.Arm();
        var first = Task.Run(() => Commit(env, ("a", "1")));
        gate.WaitUntilHeld();

        // The write lock went with the first commit's append: the next transaction begins at once, on top of it.
        using var cancel = new CancellationTokenSource();
        ValueTask<CommitStats> second;
        using (var tx = env.BeginWrite(TimeSpan.Zero))
        {
            var tree = tx.OpenTree("t");
            Assert.Equal("1"u8.ToArray(), tree.Get(TestData.Key("a")));
            tree.Put(TestData.Key("b"), "2"u8);
            second = tx.CommitAsync(cancel.Token);
        }
        // Handed to the journal: cancelling now changes nothing.
        cancel.Cancel();
        Assert.False(second.IsCompleted);
        Assert.False(first.IsCompleted);

        // Readers see only durable commits.
        Assert.Equal("0", GetString(env, "t", "before"));
        Assert.Null(GetString(env, "t", "a"));
        Assert.Null(GetString(env, "t", "b"));

        gate.Release();
        var firstStats = await first;
        var secondStats = await second;
        Assert.True(firstStats.IsDurable);
        Assert.True(secondStats.IsDurable);
        Assert.Equal(firstStats.TransactionId + 1, secondStats.TransactionId);
        Assert.Equal("1", GetString(env, "t", "a"));
        Assert.Equal("2", GetString(env, "t", "b"));
        var stats = env.GetStats();
        Assert.Equal(secondStats.TransactionId, stats.LastDurableTransactionId);
        Assert.Equal(secondStats.TransactionId, stats.LastTransactionId);
        Assert.InRange(stats.Journal.Writes - writesBefore, 2, 2);

        env.SimulateCrash();
        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        Assert.Equal("1", GetString(reopened, "t", "a"));
        Assert.Equal("2", GetString(reopened, "t", "b"));
    }

    [Fact]
    public async Task Entries_appended_while_a_write_is_in_flight_go_out_together_in_the_next_write()
    {
        using var dir = new TempDirectory();
        var gate = new GatedJournalWrites();
        using var env = StorageEnvironment.Open(dir.Path, gate.Options);
        PutAndCommit(env, "t", ("before", "0"));

        gate.Arm();
        var first = Task.Run(() => Commit(env, ("a", "1")));
        gate.WaitUntilHeld();
        var writesDuring = env.GetStats().Journal.Writes;
        var waiting = new List<ValueTask<CommitStats>>();
        for (var i = 0; i < 5; i++)
        {
            using var tx = env.BeginWrite(TimeSpan.Zero);
            tx.OpenTree("t").Put(TestData.Key($"k{i}"), TestData.Value($"v{i}"));
            waiting.Add(tx.CommitAsync(TestContext.Current.CancellationToken));
        }
        gate.Release();
        await first;
        foreach (var commit in waiting) Assert.True((await commit).IsDurable);

        // The gated write, then one write for the five commits that waited behind it.
        Assert.Equal(writesDuring + 2, env.GetStats().Journal.Writes);
        for (var i = 0; i < 5; i++) Assert.Equal($"v{i}", GetString(env, "t", $"k{i}"));
    }

    [Fact]
    public async Task A_failed_write_fails_its_commits_and_every_later_one_in_flight_and_a_reopen_keeps_what_was_acknowledged()
    {
        using var dir = new TempDirectory();
        var gate = new GatedJournalWrites();
        var env = StorageEnvironment.Open(dir.Path, gate.Options);
        PutAndCommit(env, "t", ("acknowledged", "yes"));

        gate.Arm(fail: true);
        var first = Task.Run(() => Commit(env, ("a", "1")));
        gate.WaitUntilHeld();
        ValueTask<CommitStats> second;
        using (var tx = env.BeginWrite(TimeSpan.Zero))
        {
            tx.OpenTree("t").Put(TestData.Key("b"), "2"u8);
            second = tx.CommitAsync(TestContext.Current.CancellationToken);
        }
        gate.Release();

        var failed = await Assert.ThrowsAsync<StorageException>(() => first);
        Assert.Equal(StorageErrorCode.IoFailure, failed.ErrorCode);
        var later = await Assert.ThrowsAsync<StorageException>(async () => await second);
        Assert.Equal(StorageErrorCode.EnvironmentPoisoned, later.ErrorCode);
        Assert.Equal(StorageErrorCode.EnvironmentPoisoned, Assert.Throws<StorageException>(() => env.BeginWrite()).ErrorCode);
        // Readers never saw either.
        Assert.Equal("yes", GetString(env, "t", "acknowledged"));
        Assert.Null(GetString(env, "t", "a"));
        Assert.Null(GetString(env, "t", "b"));
        env.Dispose();

        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        Assert.Equal("yes", GetString(reopened, "t", "acknowledged"));
        Assert.Null(GetString(reopened, "t", "a"));
        Assert.Null(GetString(reopened, "t", "b"));
    }

    [Fact]
    public async Task A_pipelined_writers_failed_write_fails_every_commit_it_has_in_flight_and_poisons_the_environment()
    {
        using var dir = new TempDirectory();
        var gate = new GatedJournalWrites();
        var env = StorageEnvironment.Open(dir.Path, gate.Options);
        PutAndCommit(env, "t", ("acknowledged", "yes"));

        // One thread: each transaction begins as soon as the one before is handed to the journal; the first write is
        // held, then fails.
        gate.Arm(fail: true);
        var inFlight = new List<Task<CommitStats>>();
        for (var i = 0; i < 8; i++)
        {
            using var tx = env.BeginWrite(TimeSpan.Zero);
            tx.OpenTree("t").Put(TestData.Key($"p{i}"), "v"u8);
            inFlight.Add(tx.CommitAsync(TestContext.Current.CancellationToken).AsTask());
            if (i == 0) gate.WaitUntilHeld();
        }
        Assert.All(inFlight, commit => Assert.False(commit.IsCompleted));
        gate.Release();

        var first = await Assert.ThrowsAsync<StorageException>(() => inFlight[0]);
        Assert.Equal(StorageErrorCode.IoFailure, first.ErrorCode);
        foreach (var later in inFlight.Skip(1))
        {
            Assert.Equal(StorageErrorCode.EnvironmentPoisoned, (await Assert.ThrowsAsync<StorageException>(() => later)).ErrorCode);
        }
        Assert.Equal(StorageErrorCode.EnvironmentPoisoned, Assert.Throws<StorageException>(() => env.BeginWrite()).ErrorCode);
        for (var i = 0; i < 8; i++) Assert.Null(GetString(env, "t", $"p{i}"));
        env.Dispose();

        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        Assert.Equal("yes", GetString(reopened, "t", "acknowledged"));
        for (var i = 0; i < 8; i++) Assert.Null(GetString(reopened, "t", $"p{i}"));
    }

    [Fact]
    public async Task CommitAsync_cancelled_before_its_entry_is_handed_over_rolls_the_transaction_back()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"));
        var tx = env.BeginWrite();
        tx.OpenTree("t").Put(TestData.Key("a"), "changed"u8);
        var commit = tx.CommitAsync(new CancellationToken(canceled: true));
        Assert.True(commit.IsCanceled);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(async () => await commit);
        Assert.Equal(StorageErrorCode.TransactionNotUsable, Assert.Throws<StorageException>(() => tx.OpenTree("t")).ErrorCode);

        // Rolled back, and the write lock is free.
        using (var next = env.BeginWrite(TimeSpan.Zero))
        {
            Assert.Equal("1"u8.ToArray(), next.OpenTree("t").Get(TestData.Key("a")));
        }
        tx.Dispose();
        Assert.Equal("1", GetString(env, "t", "a"));
    }

    [Fact]
    public async Task Concurrent_committers_sync_and_async_lose_nothing_acknowledged_across_a_crash()
    {
        using var dir = new TempDirectory();
        var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        const int Threads = 8, PerThread = 40;
        var acknowledged = new ConcurrentDictionary<string, string>();
        var readerErrors = new ConcurrentQueue<string>();
        using var stop = new CancellationTokenSource();
        // A reader checks, throughout, that every key acknowledged before it began is in its snapshot.
        var reader = Task.Run(() =>
        {
            while (!stop.IsCancellationRequested)
            {
                var expected = acknowledged.ToArray();
                using var rtx = env.BeginRead();
                if (!rtx.TryOpenTree("t", out var tree)) continue;
                foreach (var (key, value) in expected)
                {
                    var found = tree.Get(TestData.Key(key));
                    if (found is null || System.Text.Encoding.UTF8.GetString(found) != value) readerErrors.Enqueue(key);
                }
            }
        }, TestContext.Current.CancellationToken);
        PutAndCommit(env, "t", ("start", "0"));
        var writers = Enumerable.Range(0, Threads).Select(t => Task.Run(async () =>
        {
            for (var i = 0; i < PerThread; i++)
            {
                var key = $"t{t}-{i}";
                var value = $"v{t}.{i}";
                using var tx = env.BeginWrite(TimeSpan.FromSeconds(30));
                tx.OpenTree("t").Put(TestData.Key(key), System.Text.Encoding.UTF8.GetBytes(value));
                var stats = i % 2 == 0 ? tx.Commit() : await tx.CommitAsync();
                Assert.True(stats.IsDurable);
                Assert.True(env.GetStats().LastDurableTransactionId >= stats.TransactionId);
                acknowledged[key] = value;
            }
        })).ToArray();
        await Task.WhenAll(writers);
        stop.Cancel();
        await reader;
        Assert.Empty(readerErrors);
        Assert.Equal(Threads * PerThread, acknowledged.Count);

        env.SimulateCrash();
        using (var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small))
        {
            foreach (var (key, value) in acknowledged) Assert.Equal(value, GetString(reopened, "t", key));
        }
        var check = Storage.Inspection.EnvironmentSnapshot.Check(dir.Path);
        Assert.True(check.IsConsistent, string.Join("; ", check.Problems));
    }

    private static CommitStats Commit(StorageEnvironment env, params (string Key, string Value)[] entries)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("t");
        foreach (var (key, value) in entries) tree.Put(TestData.Key(key), TestData.Value(value));
        return tx.Commit();
    }
}
