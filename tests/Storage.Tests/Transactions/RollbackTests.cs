using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.TransactionTests;

public sealed class Disposing_a_write_transaction_without_commit
{
    [Fact]
    public void Rolls_back_its_puts_deletes_and_new_trees()
    {
        using var temp = new TempDirectory();
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            PutAndCommit(env, "t", ("keep", "1"), ("doomed", "2"));
            var before = env.GetStats().LastTransactionId;

            using (var tx = env.BeginWrite())
            {
                var tree = tx.OpenTree("t");
                tree.Put("keep"u8, "changed"u8);
                tree.Put("added"u8, new byte[5000]);
                Assert.True(tree.Delete("doomed"u8));
                tx.CreateTree("new-tree").Put("x"u8, "y"u8);
                Assert.Equal(2, tree.Count);
            }

            Assert.Equal(before, env.GetStats().LastTransactionId);
            Assert.Equal("1", GetString(env, "t", "keep"));
            Assert.Equal("2", GetString(env, "t", "doomed"));
            Assert.Null(GetString(env, "t", "added"));
            Assert.Equal(-1, CountOf(env, "new-tree"));

            // The next write transaction starts from the committed state.
            using (var tx = env.BeginWrite())
            {
                var tree = tx.OpenTree("t");
                Assert.Equal(2, tree.Count);
                Assert.Equal("1"u8.ToArray(), tree.Get("keep"u8));
                Assert.False(tx.TryOpenTree("new-tree", out _));
                Assert.Equal(before + 1, tx.TransactionId);
            }
        }

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            Assert.Equal("1", GetString(env, "t", "keep"));
            Assert.Null(GetString(env, "t", "added"));
            Assert.Equal(-1, CountOf(env, "new-tree"));
        }
    }

    [Fact]
    public void Many_rolled_back_transactions_leak_neither_pages_nor_scratch_memory()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        PutAndCommit(env, "t", ("a", "1"));
        env.Checkpoint();
        var before = env.GetStats();

        for (var i = 0; i < 50; i++)
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenTree("t");
            for (var k = 0; k < 200; k++) tree.Put(TestData.Key($"k{k:D4}"), TestData.Value(k, k % 20 == 0 ? 10_000 : 100));
        }

        var after = env.GetStats();
        Assert.Equal(before.LastTransactionId, after.LastTransactionId);
        Assert.Equal(before.Space.PagesInUseOrFree, after.Space.PagesInUseOrFree);
        Assert.Equal(before.Memory.ScratchBytes, after.Memory.ScratchBytes);
        Assert.Equal(1, CountOf(env, "t"));
    }

    [Fact]
    public void A_transaction_that_changed_nothing_commits_without_a_journal_write()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"));
        var before = env.GetStats();

        using (var tx = env.BeginWrite())
        {
            Assert.Equal("1"u8.ToArray(), tx.OpenTree("t").Get("a"u8));
            Assert.Equal(0, tx.Commit().TransactionId);
        }

        var after = env.GetStats();
        Assert.Equal(before.Journal.Writes, after.Journal.Writes);
        Assert.Equal(before.LastTransactionId, after.LastTransactionId);
    }
}
