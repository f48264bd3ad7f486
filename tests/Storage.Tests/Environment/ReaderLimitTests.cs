using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.EnvironmentTests;

public sealed class At_the_reader_limit_with_FailCommits
{
    [Fact]
    public void Commits_fail_with_ReaderLimitExceeded_until_the_reader_ends()
    {
        using var dir = new TempDirectory();
        var options = QuietOptions.Value with { ReaderLimitPolicy = ReaderLimitPolicy.FailCommits, ReaderLimitPinnedBytes = 8192 };
        ReaderWarning? limit = null;
        using var env = StorageEnvironment.Open(dir.Path, options with { OnReaderWarning = w => limit = w });
        PutAndCommit(env, "t", ("a", "1"));
        var reader = env.BeginRead();
        PutAndCommit(env, "t", ("a", "2"));
        PutAndCommit(env, "t", ("a", "3"));
        env.ReaderMonitor.CheckNow();
        Assert.True(limit is { LimitReached: true, Policy: ReaderLimitPolicy.FailCommits });

        using (var tx = env.BeginWrite())
        {
            tx.OpenTree("t").Put(TestData.Key("a"), TestData.Value("refused"));
            var refused = Assert.Throws<StorageException>(() => tx.Commit());
            Assert.Equal(StorageErrorCode.ReaderLimitExceeded, refused.ErrorCode);
            Assert.Contains($"snapshot {reader.TransactionId}", refused.Message);
            // A refused commit fails the transaction like any other failed commit.
            Assert.Equal(StorageErrorCode.TransactionNotUsable, Assert.Throws<StorageException>(() => tx.Commit()).ErrorCode);
        }
        Assert.Equal("3", GetString(env, "t", "a"));
        // The reader is not disturbed.
        Assert.Equal("1"u8.ToArray(), reader.OpenTree("t").Get(TestData.Key("a")));

        reader.Dispose();
        PutAndCommit(env, "t", ("a", "4"));
        Assert.Equal("4", GetString(env, "t", "a"));
        Assert.Equal(1, env.GetStats().Readers.CommitsRefused);
    }
}

public sealed class At_the_reader_limit_with_EndOldestReader
{
    [Fact]
    public void The_oldest_reader_keeps_what_it_read_until_its_next_call_which_fails_with_SnapshotTooOld()
    {
        using var dir = new TempDirectory();
        ReaderWarning? limit = null;
        var options = QuietOptions.Value with
        {
            ReaderLimitPolicy = ReaderLimitPolicy.EndOldestReader,
            ReaderLimitPinnedBytes = 8192,
            OnReaderWarning = w => limit = w,
        };
        using var env = StorageEnvironment.Open(dir.Path, options);
        PutAndCommit(env, "t", ("in-file", "checkpointed"), ("big", new string('b', 20_000)));
        env.Checkpoint();
        PutAndCommit(env, "t", ("in-scratch", "committed"));

        var reader = env.BeginRead();
        var tree = reader.OpenTree("t");
        var newer = env.BeginRead();
        Assert.True(tree.TryGet(TestData.Key("in-file"), out var fromFile));
        Assert.True(tree.TryGet(TestData.Key("in-scratch"), out var fromScratch));
        Assert.True(tree.TryGet(TestData.Key("big"), out var overflow));
        for (var i = 0; i < 5; i++) PutAndCommit(env, "t", ("in-file", $"changed {i}"), ("in-scratch", $"changed {i}"), ("big", new string('c', 20_000 + i)));
        env.ReaderMonitor.CheckNow();
        Assert.True(limit is { LimitReached: true, Policy: ReaderLimitPolicy.EndOldestReader });
        Assert.Equal(reader.TransactionId, limit.Value.TransactionId);

        // Ended, but it has not called since: its snapshot is still pinned, so more commits and a checkpoint change nothing it holds.
        for (var i = 0; i < 5; i++) PutAndCommit(env, "t", ("in-file", $"again {i}"), ("in-scratch", $"again {i}"), ("big", new string('d', 21_000 + i)));
        env.Checkpoint();
        Assert.Equal("checkpointed"u8.ToArray(), fromFile.ToArray());
        Assert.Equal("committed"u8.ToArray(), fromScratch.ToArray());
        Assert.Equal(20_000, overflow.Length);
        Assert.True(overflow.IndexOfAnyExcept((byte)'b') < 0);
        Assert.Equal(2, env.GetStats().Readers.ActiveTransactions);

        var ended = Assert.Throws<StorageException>(() => tree.Get(TestData.Key("in-file")));
        Assert.Equal(StorageErrorCode.SnapshotTooOld, ended.ErrorCode);
        Assert.Equal(StorageErrorCode.SnapshotTooOld, Assert.Throws<StorageException>(() => reader.OpenTree("t")).ErrorCode);
        // Its snapshot is released: the newer reader is the oldest now.
        Assert.Equal(newer.TransactionId, env.GetStats().Readers.OldestTransactionId);
        Assert.Equal(1, env.GetStats().Readers.Ended);
        reader.Dispose();

        // The newer reader still sees its own snapshot; it is ended at the next check, since it pins past the limit too.
        Assert.Equal("committed"u8.ToArray(), newer.OpenTree("t").Get(TestData.Key("in-scratch")));
        env.ReaderMonitor.CheckNow();
        Assert.Equal(StorageErrorCode.SnapshotTooOld, Assert.Throws<StorageException>(() => newer.OpenTree("t")).ErrorCode);
        newer.Dispose();
        Assert.Equal(0, env.GetStats().Readers.ActiveTransactions);
        Assert.Equal("again 4", GetString(env, "t", "in-scratch"));
    }

    [Fact]
    public void A_cursor_of_the_ended_reader_fails_at_its_next_step()
    {
        using var dir = new TempDirectory();
        var options = QuietOptions.Value with { ReaderLimitPolicy = ReaderLimitPolicy.EndOldestReader, ReaderLimitAge = TimeSpan.Zero };
        using var env = StorageEnvironment.Open(dir.Path, options);
        PutAndCommit(env, "t", ("a", "1"), ("b", "2"));
        using var reader = env.BeginRead();
        var cursor = reader.OpenTree("t").CreateCursor();
        Assert.True(cursor.SeekFirst());

        env.ReaderMonitor.CheckNow();

        Assert.Equal(StorageErrorCode.SnapshotTooOld, Assert.Throws<StorageException>(() => cursor.MoveNext()).ErrorCode);
        Assert.Equal(StorageErrorCode.SnapshotTooOld, Assert.Throws<StorageException>(() => cursor.Key.ToArray()).ErrorCode);
    }
}

public sealed class Reader_options
{
    [Fact]
    public void Are_validated_naming_the_option()
    {
        using var temp = new TempDirectory();
        Assert.Equal(nameof(StorageOptions.ReaderWarningAge), Assert.Throws<ArgumentOutOfRangeException>(() => StorageEnvironment.Open(temp.Path, new StorageOptions { ReaderWarningAge = TimeSpan.FromSeconds(-2) })).ParamName);
        Assert.Equal(nameof(StorageOptions.ReaderLimitPinnedBytes), Assert.Throws<ArgumentOutOfRangeException>(() => StorageEnvironment.Open(temp.Path, new StorageOptions { ReaderLimitPinnedBytes = -1 })).ParamName);
        // A policy with no limit to apply it at is a mistake.
        Assert.Equal(nameof(StorageOptions.ReaderLimitPolicy), Assert.Throws<ArgumentOutOfRangeException>(() => StorageEnvironment.Open(temp.Path, new StorageOptions { ReaderLimitPolicy = ReaderLimitPolicy.FailCommits })).ParamName);
        Assert.False(File.Exists(temp.Combine("data.storage")));
    }
}
