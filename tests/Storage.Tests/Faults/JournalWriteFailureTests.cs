using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.FaultTests;

public sealed class A_failed_journal_write_during_commit
{
    private static StorageOptions With(ScriptedFaults faults) => (TestOptions.JournalOnly with { MaxJournalFileSizeBytes = 256 << 10 }).WithFaults(faults);

    [Fact]
    public void Fails_the_commit_with_IoFailure_poisons_writes_keeps_reads_and_a_reopen_recovers_every_earlier_commit()
    {
        using var temp = new TempDirectory("fault");
        var faults = new ScriptedFaults();
        var env = StorageEnvironment.Open(temp.Path, With(faults));
        for (var i = 0; i < 5; i++) PutAndCommit(env, "t", ($"k{i}", $"v{i}"));

        faults.FailWrites((path, _, _) => ScriptedFaults.IsJournal(path), ScriptedFaults.Eio);
        using (var tx = env.BeginWrite())
        {
            tx.OpenTree("t").Put("lost"u8, "x"u8);
            var error = Assert.Throws<StorageException>(() => tx.Commit());
            Assert.Equal(StorageErrorCode.IoFailure, error.ErrorCode);
            Assert.Equal(5, error.OsError);
            Assert.EndsWith(".journal", error.Path, StringComparison.Ordinal);
            // The transaction cannot be retried.
            Assert.Equal(StorageErrorCode.TransactionNotUsable, Assert.Throws<StorageException>(() => tx.Commit()).ErrorCode);
        }
        Assert.Equal(1, faults.Fired);

        var poisoned = Assert.Throws<StorageException>(() => env.BeginWrite());
        Assert.Equal(StorageErrorCode.EnvironmentPoisoned, poisoned.ErrorCode);
        Assert.Equal(StorageErrorCode.EnvironmentPoisoned, Assert.Throws<StorageException>(env.Checkpoint).ErrorCode);
        // Readers still see everything committed, and nothing of the failed transaction.
        Assert.Equal("v4", GetString(env, "t", "k4"));
        Assert.Null(GetString(env, "t", "lost"));
        env.Dispose();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        for (var i = 0; i < 5; i++) Assert.Equal($"v{i}", GetString(reopened, "t", $"k{i}"));
        Assert.Null(GetString(reopened, "t", "lost"));
        PutAndCommit(reopened, "t", ("after", "reopen"));
        Assert.Equal("reopen", GetString(reopened, "t", "after"));
    }

    [Fact]
    public async Task Poisons_async_writers_too()
    {
        using var temp = new TempDirectory("fault");
        var faults = new ScriptedFaults();
        using var env = StorageEnvironment.Open(temp.Path, With(faults));
        PutAndCommit(env, "t", ("a", "1"));
        faults.FailWrites((path, _, _) => ScriptedFaults.IsJournal(path), ScriptedFaults.Eio);
        using (var tx = env.BeginWrite())
        {
            tx.OpenTree("t").Put("b"u8, "2"u8);
            Assert.Throws<StorageException>(() => tx.Commit());
        }

        var error = await Assert.ThrowsAsync<StorageException>(async () => await env.BeginWriteAsync(TestContext.Current.CancellationToken));
        Assert.Equal(StorageErrorCode.EnvironmentPoisoned, error.ErrorCode);
    }

    [Fact]
    public void When_creating_the_next_journal_file_fails_the_commit_fails_and_a_reopen_recovers()
    {
        using var temp = new TempDirectory("fault");
        var faults = new ScriptedFaults();
        var env = StorageEnvironment.Open(temp.Path, With(faults));
        var model = OrdinalBytes.NewModel();
        // Fail every journal write from now on, on any thread: the current file's entries and any new file's zero fill.
        var committed = 0;
        StorageException? failure = null;
        for (var i = 0; i < 200 && failure is null; i++)
        {
            if (i == 10) faults.FailWrites((path, _, _) => ScriptedFaults.IsJournal(path), ScriptedFaults.Eio, once: false, thisThreadOnly: false);
            using var tx = env.BeginWrite();
            var key = TestData.Key($"k{i:D3}");
            var value = TestData.Value(i + 1, 1500);
            tx.OpenOrCreateTree("t").Put(key, value);
            try
            {
                tx.Commit();
                model[key] = value;
                committed++;
            }
            catch (StorageException e)
            {
                failure = e;
            }
        }
        Assert.NotNull(failure);
        Assert.Equal(StorageErrorCode.IoFailure, failure.ErrorCode);
        Assert.Equal(10, committed);
        faults.Clear();
        env.Dispose();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using var read = reopened.BeginRead();
        TreeAssert.Equal(model, read.OpenTree("t"));
    }
}

public sealed class A_full_disk
{
    [Fact]
    public void Refusing_a_new_journal_file_leaves_no_part_of_it_behind()
    {
        using var temp = new TempDirectory("full");
        var faults = new ScriptedFaults();
        var options = (TestOptions.JournalOnly with { MinJournalFileSizeBytes = 64 << 10, MaxJournalFileSizeBytes = 64 << 10 }).WithFaults(faults);
        var env = StorageEnvironment.Open(temp.Path, options);
        PutAndCommit(env, "t", ("a", "1"));
        // Every spare's pre-size is refused, in the background and on the committing thread alike.
        faults.FailWrites((path, _, _) => path.EndsWith(".spare", StringComparison.Ordinal), ScriptedFaults.Enospc, once: false, thisThreadOnly: false);
        StorageFullException? full = null;
        for (var i = 0; i < 100 && full is null; i++)
        {
            full = Record.Exception(() => PutAndCommit(env, "t", ($"k{i:D3}", new string('v', 6_000)))) as StorageFullException;
        }
        Assert.NotNull(full);
        env.Dispose();

        var journals = Path.Combine(temp.Path, "Journals");
        Assert.Empty(Directory.EnumerateFiles(journals, "*.spare"));
        faults.Clear();
        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        Assert.Equal("1", GetString(reopened, "t", "a"));
    }

    [Fact]
    public void During_a_journal_write_fails_the_commit_with_StorageFullException_and_a_reopen_recovers()
    {
        using var temp = new TempDirectory("full");
        var faults = new ScriptedFaults();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly.WithFaults(faults));
        PutAndCommit(env, "t", ("a", "1"));
        faults.FailWrites((path, _, _) => ScriptedFaults.IsJournal(path), ScriptedFaults.Enospc);

        using (var tx = env.BeginWrite())
        {
            tx.OpenTree("t").Put("b"u8, new byte[10_000]);
            var error = Assert.Throws<StorageFullException>(() => tx.Commit());
            Assert.Equal(StorageErrorCode.DiskFull, error.ErrorCode);
            Assert.Equal(28, error.OsError);
            Assert.NotNull(error.Path);
        }
        Assert.Equal("1", GetString(env, "t", "a"));
        env.Dispose();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        Assert.Equal("1", GetString(reopened, "t", "a"));
        Assert.Null(GetString(reopened, "t", "b"));
    }
}
