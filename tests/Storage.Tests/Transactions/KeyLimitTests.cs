using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.TransactionTests;

public sealed class Keys_outside_1_to_1024_bytes
{
    [Fact]
    public void A_1025_byte_key_is_rejected_naming_the_limit_and_nothing_is_written()
    {
        using var temp = new TempDirectory();
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            var error = Assert.Throws<ArgumentException>(() => tree.Put(new byte[1025], "v"u8));

            Assert.Contains("1024", error.Message.Replace(",", "", StringComparison.Ordinal), StringComparison.Ordinal);
            Assert.Contains("1025", error.Message, StringComparison.Ordinal);
            Assert.Equal(0, tree.Count);
            // The transaction is still usable.
            tree.Put("ok"u8, "v"u8);
            tx.Commit();
        }

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            using var tx = env.BeginRead();
            var tree = tx.OpenTree("t");
            Assert.Equal(1, tree.Count);
            Assert.Equal("ok"u8.ToArray(), TreeAssert.ReadAll(tree).Single().Key);
        }
    }

    [Fact]
    public void An_empty_key_is_rejected_naming_the_limit_and_nothing_is_written()
    {
        using var temp = new TempDirectory();
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            var error = Assert.Throws<ArgumentException>(() => tree.Put(ReadOnlySpan<byte>.Empty, "v"u8));

            Assert.Contains("1 to 1", error.Message, StringComparison.Ordinal);
            Assert.Equal(0, tree.Count);
            tree.Put("ok"u8, "v"u8);
            tx.Commit();
        }

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            Assert.Equal(1, CountOf(env, "t"));
        }
    }

    [Fact]
    public void Lookups_and_deletes_with_an_invalid_key_are_rejected_too_and_leave_the_transaction_usable()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"));
        using var tx = env.BeginWrite();
        var tree = tx.OpenTree("t");

        Assert.Throws<ArgumentException>(() => tree.Delete(new byte[1025]));
        Assert.Throws<ArgumentException>(() => tree.Delete(ReadOnlySpan<byte>.Empty));
        Assert.Throws<ArgumentException>(() => tree.Get(new byte[2000]));
        Assert.Throws<ArgumentException>(() => tree.Contains(ReadOnlySpan<byte>.Empty));

        Assert.True(tree.Delete("a"u8));
        tx.Commit();
        Assert.Equal(0, CountOf(env, "t"));
    }

    [Fact]
    public void Keys_of_exactly_1_and_1024_bytes_round_trip()
    {
        using var temp = new TempDirectory();
        var longest = TestData.Value(7, 1024);
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            tree.Put(new byte[] { 0 }, "zero"u8);
            tree.Put(longest, "longest"u8);
            tx.Commit();
        }

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            using var tx = env.BeginRead();
            var tree = tx.OpenTree("t");
            Assert.Equal("zero"u8.ToArray(), tree.Get(new byte[] { 0 }));
            Assert.Equal("longest"u8.ToArray(), tree.Get(longest));
        }
    }
}
