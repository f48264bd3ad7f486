using System.Text;
using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.TransactionTests;

public sealed class Named_trees
{
    [Fact]
    public void Can_be_created_listed_opened_and_deleted_and_it_all_survives_a_reopen()
    {
        using var temp = new TempDirectory();
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            using (var tx = env.BeginWrite())
            {
                tx.CreateTree("b").Put("k"u8, "b"u8);
                tx.CreateTree("a").Put("k"u8, "a"u8);
                tx.CreateTree("c").Put("k"u8, "c"u8);
                Assert.Equal(new[] { "a", "b", "c" }, tx.ListTrees());
                tx.Commit();
            }
            using (var tx = env.BeginWrite())
            {
                Assert.True(tx.DeleteTree("b"));
                Assert.False(tx.DeleteTree("b"));
                Assert.False(tx.DeleteTree("never"));
                Assert.Equal(new[] { "a", "c" }, tx.ListTrees());
                tx.Commit();
            }
        }

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            using var tx = env.BeginRead();
            Assert.Equal(new[] { "a", "c" }, tx.ListTrees());
            Assert.Equal("a"u8.ToArray(), tx.OpenTree("a").Get("k"u8));
            Assert.Equal("c"u8.ToArray(), tx.OpenTree("c").Get("k"u8));
            Assert.False(tx.TryOpenTree("b", out _));
        }
    }

    [Fact]
    public void Creating_an_existing_tree_fails_with_TreeExists_and_the_transaction_stays_usable()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"));

        using var tx = env.BeginWrite();
        var error = Assert.Throws<StorageException>(() => tx.CreateTree("t"));
        Assert.Equal(StorageErrorCode.TreeExists, error.ErrorCode);
        tx.CreateTree("fresh");
        Assert.Equal(StorageErrorCode.TreeExists, Assert.Throws<StorageException>(() => tx.CreateTree("fresh")).ErrorCode);
        tx.OpenTree("t").Put("b"u8, "2"u8);
        tx.Commit();

        Assert.Equal("2", GetString(env, "t", "b"));
        Assert.Equal(0, CountOf(env, "fresh"));
    }

    [Fact]
    public void Opening_a_missing_tree_fails_with_TreeNotFound()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);

        using (var read = env.BeginRead())
        {
            Assert.Equal(StorageErrorCode.TreeNotFound, Assert.Throws<StorageException>(() => read.OpenTree("missing")).ErrorCode);
        }
        using (var write = env.BeginWrite())
        {
            Assert.Equal(StorageErrorCode.TreeNotFound, Assert.Throws<StorageException>(() => write.OpenTree("missing")).ErrorCode);
            Assert.False(write.TryOpenTree("missing", out _));
        }
    }

    [Fact]
    public void A_tree_deleted_in_a_transaction_cannot_be_used_through_an_earlier_handle()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"));

        using var tx = env.BeginWrite();
        var tree = tx.OpenTree("t");
        Assert.True(tx.DeleteTree("t"));

        Assert.Equal(StorageErrorCode.TreeNotFound, Assert.Throws<StorageException>(() => tree.Get("a"u8)).ErrorCode);
        Assert.Equal(StorageErrorCode.TreeNotFound, Assert.Throws<StorageException>(() => tree.Put("b"u8, "2"u8)).ErrorCode);
        Assert.Equal(StorageErrorCode.TreeNotFound, Assert.Throws<StorageException>(() => tx.OpenTree("t")).ErrorCode);
    }

    [Fact]
    public void A_deleted_tree_recreated_under_the_same_name_starts_empty()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            for (var i = 0; i < 2000; i++) tree.Put(Encoding.ASCII.GetBytes($"key-{i:D5}"), TestData.Value(i, i % 7 == 0 ? 3000 : 40));
            tx.Commit();
        }
        var before = env.GetStats();

        using (var tx = env.BeginWrite())
        {
            Assert.True(tx.DeleteTree("t"));
            var again = tx.CreateTree("t");
            Assert.Equal(0, again.Count);
            Assert.Null(again.Get("key-00001"u8));
            again.Put("new"u8, "1"u8);
            tx.Commit();
        }

        Assert.Equal(1, CountOf(env, "t"));
        Assert.Null(GetString(env, "t", "key-00001"));
        // Freed pages are free in the bitmaps, or past the end of the file when they were its end.
        var after = env.GetStats();
        Assert.True(after.Space.PagesInUseOrFree - after.Space.FreePages < before.Space.PagesInUseOrFree - before.Space.FreePages, "deleting a tree frees its pages");
    }

    [Fact]
    public void A_tree_deleted_and_rolled_back_is_still_there()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"));

        using (var tx = env.BeginWrite())
        {
            Assert.True(tx.DeleteTree("t"));
        }

        Assert.Equal("1", GetString(env, "t", "a"));
    }

    [Fact]
    public void A_tree_name_with_a_lone_surrogate_is_refused_not_merged_with_another()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using var tx = env.BeginWrite();

        // Each would encode as U+FFFD: two trees open here, one on disk.
        foreach (var name in new[] { "\uD800", "\uDC00", "a\uD800b", "\uFFFD\uDFFF" })
        {
            Assert.Equal("name", Assert.Throws<ArgumentException>(() => tx.CreateTree(name)).ParamName);
            Assert.Throws<ArgumentException>(() => tx.OpenOrCreateTree(name));
            Assert.Throws<ArgumentException>(() => tx.TryOpenTree(name, out _));
        }
        tx.CreateTree("\uFFFD");
        tx.CreateTree("\uD83D\uDE00"); // a surrogate pair
        tx.Commit();

        using var read = env.BeginRead();
        Assert.Equal(["\uD83D\uDE00", "\uFFFD"], read.ListTrees().Order(StringComparer.Ordinal));
    }

    [Fact]
    public void Tree_names_must_be_1_to_255_bytes_of_UTF8()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using var tx = env.BeginWrite();

        Assert.Throws<ArgumentException>(() => tx.CreateTree(""));
        Assert.Throws<ArgumentException>(() => tx.CreateTree(new string('n', 256)));
        Assert.Throws<ArgumentException>(() => tx.CreateTree(new string('é', 128))); // 256 bytes
        tx.CreateTree(new string('n', 255));
        tx.CreateTree(new string('é', 127)); // 254 bytes
        tx.CreateTree("名前");
        tx.Commit();

        using var read = env.BeginRead();
        Assert.Equal(3, read.ListTrees().Count);
        Assert.True(read.TryOpenTree("名前", out _));
    }

    [Fact]
    public void Trees_are_listed_in_ordinal_order_of_their_UTF8_bytes()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        var names = new[] { "b", "B", "a", "é", "aa", "Z", "0", "~" };
        using (var tx = env.BeginWrite())
        {
            foreach (var name in names) tx.CreateTree(name);
            tx.Commit();
        }

        using var read = env.BeginRead();
        var expected = names.OrderBy(n => Encoding.UTF8.GetBytes(n), OrdinalBytes.Instance).ToArray();
        Assert.Equal(expected, read.ListTrees());
    }
}
