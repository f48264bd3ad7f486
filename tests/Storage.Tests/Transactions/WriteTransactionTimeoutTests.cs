using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.TransactionTests;

public sealed class Waiting_for_the_write_transaction
{
    [Fact]
    public void Times_out_with_WriteTransactionTimeout_while_another_is_open()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using var first = env.BeginWrite();
        first.CreateTree("t").Put("a"u8, "1"u8);

        var error = Assert.Throws<StorageException>(() => env.BeginWrite(TimeSpan.FromMilliseconds(50)));

        Assert.Equal(StorageErrorCode.WriteTransactionTimeout, error.ErrorCode);
        // The open one is unaffected.
        first.Commit();
        Assert.Equal("1", GetString(env, "t", "a"));
    }

    [Fact]
    public async Task Times_out_on_another_thread_and_succeeds_once_the_first_ends()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        var first = env.BeginWrite();

        var timedOut = await Task.Run(() => Assert.Throws<StorageException>(() => env.BeginWrite(TimeSpan.FromMilliseconds(50))));
        Assert.Equal(StorageErrorCode.WriteTransactionTimeout, timedOut.ErrorCode);

        first.Dispose();
        using var second = await Task.Run(() => env.BeginWrite(TimeSpan.FromSeconds(10)));
        Assert.True(second.IsWritable);
    }

    [Fact]
    public void Uses_the_options_timeout_by_default()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small with { WriteTransactionTimeout = TimeSpan.FromMilliseconds(30) });
        using var first = env.BeginWrite();

        Assert.Equal(StorageErrorCode.WriteTransactionTimeout, Assert.Throws<StorageException>(() => env.BeginWrite()).ErrorCode);
    }

    [Fact]
    public async Task An_async_waiter_gets_the_transaction_when_the_first_ends_and_can_be_cancelled()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        var first = env.BeginWrite();

        using (var cancel = new CancellationTokenSource())
        {
            var cancelled = env.BeginWriteAsync(cancel.Token).AsTask();
            Assert.False(cancelled.IsCompleted);
            await cancel.CancelAsync();
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => cancelled);
        }

        var waiting = env.BeginWriteAsync(TestContext.Current.CancellationToken).AsTask();
        Assert.False(waiting.IsCompleted);
        first.Dispose();
        using var second = await waiting.WaitAsync(TimeSpan.FromSeconds(30), TestContext.Current.CancellationToken);
        second.OpenOrCreateTree("t").Put("a"u8, "1"u8);
        second.Commit();
        Assert.Equal("1", GetString(env, "t", "a"));
    }
}
