using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.TransactionTests;

public sealed class A_finished_transaction
{
    [Fact]
    public void Cannot_be_used_after_commit()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using var tx = env.BeginWrite();
        var tree = tx.CreateTree("t");
        tree.Put("a"u8, "1"u8);
        tx.Commit();

        AssertNotUsable(() => tree.Put("b"u8, "2"u8));
        AssertNotUsable(() => tree.Get("a"u8));
        AssertNotUsable(() => tree.Delete("a"u8));
        AssertNotUsable(() => _ = tree.Count);
        AssertNotUsable(() => tree.CreateCursor());
        AssertNotUsable(() => tx.Commit());
        AssertNotUsable(() => tx.OpenTree("t"));
        AssertNotUsable(() => tx.CreateTree("u"));
        AssertNotUsable(() => tx.ListTrees());
        Assert.Contains("committed", Assert.Throws<StorageException>(() => tx.Commit()).Message, StringComparison.OrdinalIgnoreCase);

        // Disposing after commit is fine and changes nothing; the commit stands.
        tx.Dispose();
        tx.Dispose();
        Assert.Equal("1", GetString(env, "t", "a"));
    }

    [Fact]
    public void Cannot_be_used_after_dispose()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"));

        var read = env.BeginRead();
        var readTree = read.OpenTree("t");
        var cursor = readTree.CreateCursor();
        Assert.True(cursor.SeekFirst());
        read.Dispose();
        AssertNotUsable(() => readTree.Get("a"u8));
        AssertNotUsable(() => cursor.MoveNext());
        AssertNotUsable(() => read.OpenTree("t"));

        var write = env.BeginWrite();
        var writeTree = write.OpenTree("t");
        write.Dispose();
        AssertNotUsable(() => writeTree.Put("b"u8, "2"u8));
        AssertNotUsable(() => write.Commit());
        Assert.Null(GetString(env, "t", "b"));
    }

    [Fact]
    public void A_read_transaction_cannot_change_a_tree()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"));

        using var read = env.BeginRead();
        var tree = read.OpenTree("t");
        Assert.False(read.IsWritable);
        Assert.Throws<InvalidOperationException>(() => tree.Put("b"u8, "2"u8));
        Assert.Throws<InvalidOperationException>(() => tree.Delete("a"u8));
        Assert.Equal("1"u8.ToArray(), tree.Get("a"u8));
    }

    private static void AssertNotUsable(Action action)
    {
        var error = Assert.Throws<StorageException>(action);
        Assert.Equal(StorageErrorCode.TransactionNotUsable, error.ErrorCode);
    }

    private static void AssertNotUsable(Func<object?> action) => AssertNotUsable(() => { _ = action(); });
}
