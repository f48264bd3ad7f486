using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.EnvironmentTests;

public sealed class Opening_and_reopening_an_environment
{
    [Fact]
    public void Opening_a_missing_directory_creates_an_empty_environment_with_its_files()
    {
        using var temp = new TempDirectory();
        var dir = temp.Combine("new", "nested");

        using (var env = StorageEnvironment.Open(dir, TestOptions.Small))
        {
            Assert.Equal(Path.GetFullPath(dir), env.DirectoryPath);
            using var tx = env.BeginRead();
            Assert.Empty(tx.ListTrees());
            Assert.False(tx.TryOpenTree("anything", out _));
        }

        Assert.True(File.Exists(Path.Combine(dir, "data.storage")));
        Assert.True(File.Exists(Path.Combine(dir, "lock")));
        Assert.True(Directory.Exists(Path.Combine(dir, "Journals")));
    }

    [Fact]
    public void Opening_a_missing_directory_without_CreateIfMissing_fails_and_creates_nothing()
    {
        using var temp = new TempDirectory();
        var dir = temp.Combine("absent");

        var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(dir, TestOptions.Small with { CreateIfMissing = false }));

        Assert.Equal(StorageErrorCode.IoFailure, error.ErrorCode);
        Assert.False(Directory.Exists(dir));
    }

    [Fact]
    public void Opening_a_directory_of_other_files_fails_with_NotAnEnvironment_and_creates_nothing()
    {
        using var temp = new TempDirectory();
        var dir = temp.Combine("documents");
        Directory.CreateDirectory(dir);
        File.WriteAllText(Path.Combine(dir, "notes.txt"), "mine");
        Directory.CreateDirectory(Path.Combine(dir, "photos"));

        var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(dir, TestOptions.Small));

        Assert.Equal(StorageErrorCode.NotAnEnvironment, error.ErrorCode);
        Assert.Contains(nameof(StorageOptions.CreateInNonEmptyDirectory), error.Message);
        Assert.Equal(["notes.txt", "photos"], Directory.EnumerateFileSystemEntries(dir).Select(Path.GetFileName).Order(StringComparer.Ordinal));

        using (var env = StorageEnvironment.Open(dir, TestOptions.Small with { CreateInNonEmptyDirectory = true }))
        {
            using var tx = env.BeginWrite();
            tx.CreateTree("t").Put("k"u8, "v"u8);
            tx.Commit();
        }
        // Once it holds an environment, the directory opens without the option.
        using var reopened = StorageEnvironment.Open(dir, TestOptions.Small);
        Assert.Equal("mine", File.ReadAllText(Path.Combine(dir, "notes.txt")));
    }

    [Fact]
    public void Opening_an_empty_directory_without_CreateIfMissing_fails()
    {
        using var temp = new TempDirectory();

        var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(temp.Path, TestOptions.Small with { CreateIfMissing = false }));

        Assert.Equal(StorageErrorCode.IoFailure, error.ErrorCode);
        Assert.False(File.Exists(temp.Combine("data.storage")));
    }

    [Fact]
    public void Reopening_keeps_every_committed_tree_and_value()
    {
        using var temp = new TempDirectory();
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            PutAndCommit(env, "users", ("alice", "31"), ("bob", "42"));
            PutAndCommit(env, "orders", ("o-1", "alice"));
            PutAndCommit(env, "users", ("carol", "27"));
        }

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            Assert.Equal("31", GetString(env, "users", "alice"));
            Assert.Equal("42", GetString(env, "users", "bob"));
            Assert.Equal("27", GetString(env, "users", "carol"));
            Assert.Equal("alice", GetString(env, "orders", "o-1"));
            Assert.Equal(3, CountOf(env, "users"));
            using var tx = env.BeginRead();
            Assert.Equal(["orders", "users"], tx.ListTrees());
        }
    }

    [Fact]
    public void Transaction_ids_continue_after_a_reopen()
    {
        using var temp = new TempDirectory();
        long last;
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            for (var i = 0; i < 5; i++) PutAndCommit(env, "t", ($"k{i}", "v"));
            last = env.GetStats().LastTransactionId;
            Assert.Equal(5, last);
        }

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            Assert.Equal(last, env.GetStats().LastTransactionId);
            using var tx = env.BeginWrite();
            Assert.Equal(last + 1, tx.TransactionId);
            tx.OpenTree("t").Put("k5"u8, "v"u8);
            Assert.Equal(last + 1, tx.Commit().TransactionId);
        }
    }

    [Fact]
    public void Dispose_flushes_and_syncs_everything_so_the_next_open_replays_nothing()
    {
        using var temp = new TempDirectory();
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly))
        {
            for (var i = 0; i < 20; i++) PutAndCommit(env, "t", ($"key-{i:D3}", new string('x', 100 + i)));
            Assert.Equal(0, env.GetStats().Flush.Syncs);
        }

        var header = DataFileInspector.NewerHeader(temp.Path);
        Assert.Equal(20, header.LastSyncedTransactionId);

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly))
        {
            Assert.Equal(0, env.GetStats().Recovery.ReplayedTransactions);
            Assert.Equal(20, CountOf(env, "t"));
            Assert.Equal(new string('x', 119), GetString(env, "t", "key-019"));
        }
    }

    [Fact]
    public void Crashing_without_dispose_replays_the_journal_on_the_next_open()
    {
        using var temp = new TempDirectory();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        for (var i = 0; i < 20; i++) PutAndCommit(env, "t", ($"key-{i:D3}", $"value-{i}"));
        env.SimulateCrash();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        Assert.Equal(20, reopened.GetStats().Recovery.ReplayedTransactions);
        Assert.Equal(20, CountOf(reopened, "t"));
        Assert.Equal("value-7", GetString(reopened, "t", "key-007"));
    }

    [Fact]
    public void Invalid_options_are_rejected_naming_the_option()
    {
        using var temp = new TempDirectory();

        var small = Assert.Throws<ArgumentOutOfRangeException>(() => StorageEnvironment.Open(temp.Path, new StorageOptions { MinJournalFileSizeBytes = 4096 }));
        Assert.Equal(nameof(StorageOptions.MinJournalFileSizeBytes), small.ParamName);
        var inverted = Assert.Throws<ArgumentOutOfRangeException>(() => StorageEnvironment.Open(temp.Path, new StorageOptions { MinJournalFileSizeBytes = 1 << 20, MaxJournalFileSizeBytes = 64 << 10 }));
        Assert.Equal(nameof(StorageOptions.MaxJournalFileSizeBytes), inverted.ParamName);
        var flush = Assert.Throws<ArgumentOutOfRangeException>(() => StorageEnvironment.Open(temp.Path, new StorageOptions { FlushInterval = TimeSpan.FromMilliseconds(0) }));
        Assert.Equal(nameof(StorageOptions.FlushInterval), flush.ParamName);
        Assert.False(File.Exists(temp.Combine("data.storage")));
    }
}
