using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.EnvironmentTests;

public sealed class A_disposed_environment
{
    [Fact]
    public void Refuses_new_transactions_and_checkpoints_with_EnvironmentClosed()
    {
        using var temp = new TempDirectory();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"));
        env.Dispose();

        Assert.Equal(StorageErrorCode.EnvironmentClosed, Assert.Throws<StorageException>(() => env.BeginRead()).ErrorCode);
        Assert.Equal(StorageErrorCode.EnvironmentClosed, Assert.Throws<StorageException>(() => env.BeginWrite()).ErrorCode);
        Assert.Equal(StorageErrorCode.EnvironmentClosed, Assert.Throws<StorageException>(() => env.BeginWrite(TimeSpan.Zero)).ErrorCode);
        Assert.Equal(StorageErrorCode.EnvironmentClosed, Assert.Throws<StorageException>(env.Checkpoint).ErrorCode);
    }

    [Fact]
    public async Task Refuses_async_write_transactions_with_EnvironmentClosed()
    {
        using var temp = new TempDirectory();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        env.Dispose();

        var error = await Assert.ThrowsAsync<StorageException>(async () => await env.BeginWriteAsync(TestContext.Current.CancellationToken));
        Assert.Equal(StorageErrorCode.EnvironmentClosed, error.ErrorCode);
    }

    [Fact]
    public void Can_be_disposed_twice()
    {
        using var temp = new TempDirectory();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"));
        env.Dispose();
        env.Dispose();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        Assert.Equal("1", GetString(reopened, "t", "a"));
    }

    [Fact]
    public void Lets_a_reader_opened_before_dispose_finish_reading_its_snapshot()
    {
        using var temp = new TempDirectory();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"), ("b", new string('v', 5000)));
        var reader = env.BeginRead();

        env.Dispose();

        var tree = reader.OpenTree("t");
        Assert.Equal("1"u8.ToArray(), tree.Get("a"u8));
        Assert.Equal(5000, tree.Get("b"u8)!.Length);
        reader.Dispose();
        Assert.Equal(StorageErrorCode.TransactionNotUsable, Assert.Throws<StorageException>(() => tree.Get("a"u8)).ErrorCode);
    }
}
