using Storage.Tests.Support;

namespace Storage.Tests.EnvironmentTests;

public sealed class Disposing_with_a_read_transaction_open
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
        Assert.Equal("v1"u8.ToArray(), reader.OpenTree("t").Get("k"u8));
        reader.Dispose();

        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        using var check = reopened.BeginRead();
        Assert.Equal("v2"u8.ToArray(), check.OpenTree("t").Get("k"u8));
    }
}
