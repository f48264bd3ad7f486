using Storage.Tests.Support;

namespace Storage.Tests.EnvironmentTests;

public sealed class Disposing_with_transactions_open
{
    [Fact]
    public void Keeps_the_directory_locked_and_the_snapshot_readable_until_the_reader_ends()
    {
        using var dir = new TempDirectory();
        var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        using (var tx = env.BeginWrite())
        {
            tx.CreateTree("t").Put("k"u8, "v1"u8);
            tx.Commit();
        }
        var reader = env.BeginRead();
        using (var tx = env.BeginWrite())
        {
            tx.OpenTree("t").Put("k"u8, "v2"u8);
            tx.Commit();
        }
        env.Dispose();

        // Another instance would replay v2 into the data file under the reader's snapshot.
        var locked = Assert.Throws<StorageException>(() => StorageEnvironment.Open(dir.Path, TestOptions.Small));
        Assert.Equal(StorageErrorCode.EnvironmentLocked, locked.ErrorCode);
        Assert.Contains("held by an instance in this process that was disposed while 1 read transaction", locked.Message);
        Assert.Contains("released when the last of them is disposed", locked.Message);
        Assert.Equal("v1"u8.ToArray(), reader.OpenTree("t").Get("k"u8));
        reader.Dispose();

        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        using var check = reopened.BeginRead();
        Assert.Equal("v2"u8.ToArray(), check.OpenTree("t").Get("k"u8));
    }

    [Fact]
    public void A_write_transaction_forgotten_on_the_disposing_thread_is_reported_at_once_and_nothing_changes()
    {
        using var dir = new TempDirectory();
        var env = StorageEnvironment.Open(dir.Path, TestOptions.Small with { TrackTransactionStacks = true });
        var forgotten = env.BeginWrite();
        forgotten.CreateTree("t").Put("k"u8, "v"u8);

        var started = System.Diagnostics.Stopwatch.StartNew();
        var error = Assert.Throws<StorageException>(env.Dispose);

        Assert.True(started.Elapsed < TimeSpan.FromSeconds(StorageEnvironment.DisposeWriterWaitMs / 2000.0), $"reported after {started.Elapsed}, not at once");
        Assert.Equal(StorageErrorCode.TransactionStillOpen, error.ErrorCode);
        Assert.Contains("a write transaction it began is still open", error.Message);
        Assert.Contains(nameof(A_write_transaction_forgotten_on_the_disposing_thread_is_reported_at_once_and_nothing_changes), error.Message);
        // Still open: the transaction can go on and commit, and a dispose after it closes.
        forgotten.Commit();
        forgotten.Dispose();
        env.Dispose();
        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        using var read = reopened.BeginRead();
        Assert.Equal("v"u8.ToArray(), read.OpenTree("t").Get("k"u8));
    }

    [Fact]
    public void Without_tracked_stacks_the_report_says_how_to_find_where_it_began()
    {
        using var dir = new TempDirectory();
        var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        using (var forgotten = env.BeginWrite())
        {
            var error = Assert.Throws<StorageException>(env.Dispose);
            Assert.Equal(StorageErrorCode.TransactionStillOpen, error.ErrorCode);
            Assert.Contains(nameof(StorageOptions.TrackTransactionStacks), error.Message);
        }
        env.Dispose();
    }

    [Fact]
    public async Task A_write_transaction_on_another_thread_is_waited_for_and_its_commit_kept()
    {
        using var dir = new TempDirectory();
        var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        var began = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var release = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var writer = Task.Run(async () =>
        {
            using var tx = env.BeginWrite();
            tx.CreateTree("t").Put("k"u8, "v"u8);
            began.SetResult();
            await release.Task;
            tx.Commit();
        }, TestContext.Current.CancellationToken);
        await began.Task;
        var disposing = Task.Run(env.Dispose, TestContext.Current.CancellationToken);
        // Whether the dispose is already waiting or not, the writer's commit must survive it.
        release.SetResult();
        await writer;
        await disposing;

        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        using var read = reopened.BeginRead();
        Assert.Equal("v"u8.ToArray(), read.OpenTree("t").Get("k"u8));
    }

    [Fact]
    public async Task DisposeAsync_closes_and_releases_the_directory()
    {
        using var dir = new TempDirectory();
        await using (var env = StorageEnvironment.Open(dir.Path, TestOptions.Small))
        {
            using var tx = env.BeginWrite();
            tx.CreateTree("t").Put("k"u8, "v"u8);
            tx.Commit();
        }
        await using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        using var read = reopened.BeginRead();
        Assert.Equal("v"u8.ToArray(), read.OpenTree("t").Get("k"u8));
    }

    [Fact]
    public void A_second_open_while_the_first_instance_is_open_says_so()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(dir.Path, TestOptions.Small));
        Assert.Equal(StorageErrorCode.EnvironmentLocked, error.ErrorCode);
        Assert.Contains("already open in this process, by an instance that has not been disposed", error.Message);
    }
}
