using System.Runtime.CompilerServices;
using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.EnvironmentTests;

/// <summary>
/// Transactions dropped without Dispose. Each is begun in a method of its own (not inlined), so that no stack slot of
/// the test refers to it. A <see cref="StrongBox{T}"/> holds it while the test checks what a live leak does (a
/// collection from anywhere in the process could otherwise finalize it early); once the box is emptied, a full
/// collection and the finalizers find it.
/// </summary>
public sealed class A_transaction_that_is_never_disposed
{
    [Fact]
    public void Read_is_reported_once_collected_and_no_longer_pins_its_snapshot()
    {
        using var dir = new TempDirectory();
        var leaks = new List<LeakedTransaction>();
        using var env = StorageEnvironment.Open(dir.Path, QuietOptions.Value with { OnTransactionLeaked = leak => { lock (leaks) leaks.Add(leak); } });
        PutAndCommit(env, "t", ("a", "1"));
        var held = new StrongBox<object?>();
        var leakedId = LeakReader(env, held);
        PutAndCommit(env, "t", ("a", "2"));
        Assert.Equal(leakedId, env.GetStats().Readers.OldestTransactionId);

        CollectAndFinalize(held);

        var stats = env.GetStats();
        Assert.Equal(1, stats.Readers.LeakedTransactions);
        Assert.Equal(0, stats.Readers.ActiveTransactions);
        Assert.Equal(0, stats.Readers.OldestTransactionId);
        Assert.Equal(0, stats.Memory.PinnedBytes);
        lock (leaks)
        {
            var leak = Assert.Single(leaks);
            Assert.False(leak.IsWrite);
            Assert.Equal(leakedId, leak.TransactionId);
            Assert.True(leak.Age > TimeSpan.Zero);
            Assert.Null(leak.BeganAt);
        }
    }

    [Fact]
    public void Write_releases_the_write_lock_and_its_changes_once_collected_and_says_where_it_was_begun()
    {
        using var dir = new TempDirectory();
        var leaks = new List<LeakedTransaction>();
        var options = QuietOptions.Value with { TrackTransactionStacks = true, OnTransactionLeaked = leak => { lock (leaks) leaks.Add(leak); } };
        using var env = StorageEnvironment.Open(dir.Path, options);
        PutAndCommit(env, "t", ("a", "committed"));
        var held = new StrongBox<object?>();
        LeakWriter(env, commit: false, held);

        // While it is reachable from nowhere but not yet collected, the lock is held; the timeout says where it was taken.
        var timeout = Assert.Throws<StorageException>(() => env.BeginWrite(TimeSpan.Zero));
        Assert.Equal(StorageErrorCode.WriteTransactionTimeout, timeout.ErrorCode);
        Assert.Contains(nameof(LeakWriter), timeout.Message);

        CollectAndFinalize(held);

        using (var tx = env.BeginWrite(TimeSpan.Zero))
        {
            Assert.Equal("committed"u8.ToArray(), tx.OpenTree("t").Get(TestData.Key("a")));
            Assert.Null(tx.OpenTree("t").Get(TestData.Key("uncommitted")));
            tx.OpenTree("t").Put(TestData.Key("b"), TestData.Value("after"));
            tx.Commit();
        }
        Assert.Equal("after", GetString(env, "t", "b"));
        lock (leaks)
        {
            var leak = Assert.Single(leaks);
            Assert.True(leak.IsWrite);
            Assert.Contains(nameof(LeakWriter), leak.BeganAt);
        }
    }

    [Fact]
    public void Write_that_committed_but_was_not_disposed_keeps_its_commit_and_the_lock_goes_at_commit()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, QuietOptions.Value);
        var held = new StrongBox<object?>();
        LeakWriter(env, commit: true, held);
        // Commit ends the write transaction's hold on the write lock; only the disposal is left.
        using (var next = env.BeginWrite(TimeSpan.Zero))
        {
            Assert.Equal("x"u8.ToArray(), next.OpenTree("t").Get(TestData.Key("uncommitted")));
        }
        Assert.Equal(0, env.GetStats().Readers.LeakedTransactions);

        CollectAndFinalize(held);

        using var tx = env.BeginWrite(TimeSpan.Zero);
        Assert.Equal("x"u8.ToArray(), tx.OpenTree("t").Get(TestData.Key("uncommitted")));
        Assert.Equal(1, env.GetStats().Readers.LeakedTransactions);
    }

    [Fact]
    public void Read_left_open_at_dispose_releases_the_directory_once_collected()
    {
        using var dir = new TempDirectory();
        var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"));
        var held = new StrongBox<object?>();
        LeakReader(env, held);
        env.Dispose();
        Assert.Equal(StorageErrorCode.EnvironmentLocked, Assert.Throws<StorageException>(() => StorageEnvironment.Open(dir.Path, TestOptions.Small)).ErrorCode);

        CollectAndFinalize(held);

        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        Assert.Equal("1", GetString(reopened, "t", "a"));
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long LeakReader(StorageEnvironment env, StrongBox<object?> held)
    {
        var tx = env.BeginRead();
        held.Value = tx;
        tx.OpenTree("t").Get(TestData.Key("a"));
        return tx.TransactionId;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void LeakWriter(StorageEnvironment env, bool commit, StrongBox<object?> held)
    {
        var tx = env.BeginWrite();
        held.Value = tx;
        tx.OpenOrCreateTree("t").Put(TestData.Key("uncommitted"), TestData.Value("x"));
        if (commit) tx.Commit();
    }

    private static void CollectAndFinalize(StrongBox<object?> held)
    {
        held.Value = null;
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();
    }
}
