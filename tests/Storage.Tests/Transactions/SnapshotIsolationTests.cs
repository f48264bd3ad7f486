using System.Buffers.Binary;
using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.TransactionTests;

public sealed class A_read_transaction_opened_before_commits
{
    [Fact]
    public void Keeps_seeing_the_old_values_and_count_after_many_commits_and_a_checkpoint()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        var original = OrdinalBytes.NewModel();
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            for (var i = 0; i < 500; i++)
            {
                var key = TestData.Key($"k{i:D4}");
                var value = TestData.Value(i, i % 50 == 0 ? 5000 : 30);
                tree.Put(key, value);
                original[key] = value;
            }
            tx.Commit();
        }

        using var snapshot = env.BeginRead();
        var snapshotId = snapshot.TransactionId;
        var latest = OrdinalBytes.Copy(original);
        var random = new Random(7);
        for (var commit = 0; commit < 150; commit++)
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenTree("t");
            for (var op = 0; op < 20; op++)
            {
                var key = TestData.Key($"k{random.Next(700):D4}");
                if (random.Next(3) == 0)
                {
                    tree.Delete(key);
                    latest.Remove(key);
                }
                else
                {
                    var value = TestData.Value(random.Next(), random.Next(10) == 0 ? 4000 : 25);
                    tree.Put(key, value);
                    latest[key] = value;
                }
            }
            tx.Commit();
            if (commit % 50 == 49) env.Checkpoint();
        }
        env.Checkpoint();

        Assert.Equal(snapshotId, snapshot.TransactionId);
        TreeAssert.Equal(original, snapshot.OpenTree("t"), "the old snapshot");
        using (var fresh = env.BeginRead())
        {
            TreeAssert.Equal(latest, fresh.OpenTree("t"), "a new snapshot");
        }
        // The snapshot does not see a tree created after it.
        PutAndCommit(env, "later", ("x", "y"));
        Assert.False(snapshot.TryOpenTree("later", out _));
    }

    [Fact]
    public void Does_not_see_a_tree_deleted_after_it_began_disappear()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"), ("b", new string('b', 9000)));

        using var snapshot = env.BeginRead();
        using (var tx = env.BeginWrite())
        {
            Assert.True(tx.DeleteTree("t"));
            tx.Commit();
        }
        // Reuse the freed pages for something else.
        for (var i = 0; i < 20; i++) PutAndCommit(env, "other", ($"k{i}", new string('o', 3000)));
        env.Checkpoint();

        var tree = snapshot.OpenTree("t");
        Assert.Equal("1"u8.ToArray(), tree.Get("a"u8));
        Assert.Equal(9000, tree.Get("b"u8)!.Length);
        Assert.All(tree.Get("b"u8)!, b => Assert.Equal((byte)'b', b));
    }

    [Fact]
    public void Ends_independently_of_later_snapshots()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        var readers = new List<(ReadTransaction Tx, long Value)>();
        for (var i = 1; i <= 30; i++)
        {
            PutAndCommit(env, "t", ("counter", i.ToString(System.Globalization.CultureInfo.InvariantCulture)));
            readers.Add((env.BeginRead(), i));
        }
        // Close every other one, oldest first, checking the rest each time.
        foreach (var (tx, _) in readers.Where((_, index) => index % 2 == 0)) tx.Dispose();
        env.Checkpoint();
        foreach (var (tx, value) in readers.Where((_, index) => index % 2 == 1))
        {
            Assert.Equal(value.ToString(System.Globalization.CultureInfo.InvariantCulture), System.Text.Encoding.ASCII.GetString(tx.OpenTree("t").Get("counter"u8)!));
            tx.Dispose();
        }
        Assert.Equal("30", GetString(env, "t", "counter"));
    }
}

public sealed class Readers_on_other_threads_while_a_writer_commits
{
    [Fact]
    public async Task Always_see_whole_transactions_in_commit_order()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Busy);
        const int commits = 300;
        const int readerCount = 2;
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            Write(tree, 0);
            tx.Commit();
        }

        using var start = new Barrier(readerCount + 1);
        using var writerDone = new ManualResetEventSlim();
        var readerSnapshots = new int[readerCount];

        var writer = Task.Run(() =>
        {
            start.SignalAndWait();
            try
            {
                for (var i = 1; i <= commits; i++)
                {
                    using var tx = env.BeginWrite();
                    Write(tx.OpenTree("t"), i);
                    tx.Commit();
                }
            }
            finally
            {
                writerDone.Set();
            }
        }, TestContext.Current.CancellationToken);
        var readers = Enumerable.Range(0, readerCount).Select(r => Task.Run(() =>
        {
            start.SignalAndWait();
            long previous = -1;
            while (true)
            {
                var finished = writerDone.IsSet;
                using (var tx = env.BeginRead())
                {
                    var tree = tx.OpenTree("t");
                    var generation = Check(tree);
                    Assert.True(generation >= previous, $"reader {r} went back from {previous} to {generation}");
                    previous = generation;
                    readerSnapshots[r]++;
                }
                if (finished) break;
            }
            Assert.Equal(commits, previous);
        })).ToArray();

        await Task.WhenAll([writer, .. readers]).WaitAsync(TimeSpan.FromSeconds(120), TestContext.Current.CancellationToken);
        Assert.All(readerSnapshots, n => Assert.True(n > 0));
    }

    // Generation g: keys a, b, c all hold g; the "bulk" key holds an overflow value derived from g; key g%50 of the "set" exists.
    private static void Write(Tree tree, int generation)
    {
        var bytes = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, generation);
        tree.Put("a"u8, bytes);
        tree.Put("b"u8, bytes);
        tree.Put("bulk"u8, TestData.Value(generation, 3000 + generation % 100));
        tree.Put(TestData.Key($"set-{generation:D5}"), bytes);
        tree.Delete(TestData.Key($"set-{generation - 20:D5}"));
        tree.Put("c"u8, bytes);
    }

    private static long Check(Tree tree)
    {
        var a = BinaryPrimitives.ReadInt64LittleEndian(tree.Get("a"u8));
        Assert.Equal(a, BinaryPrimitives.ReadInt64LittleEndian(tree.Get("b"u8)));
        Assert.Equal(a, BinaryPrimitives.ReadInt64LittleEndian(tree.Get("c"u8)));
        Assert.Equal(TestData.Value((int)a, 3000 + (int)a % 100), tree.Get("bulk"u8));
        var set = TreeAssert.ReadRange(tree.Prefix("set-"u8));
        var expected = Enumerable.Range((int)Math.Max(0, a - 19), (int)Math.Min(a + 1, 20)).Select(g => $"set-{g:D5}").ToArray();
        Assert.Equal(expected, set.Select(e => System.Text.Encoding.ASCII.GetString(e.Key)).ToArray());
        // The tree also has a, b, bulk, c.
        Assert.Equal(expected.Length + 4, tree.Count);
        return a;
    }
}

public sealed class A_read_transaction_across_an_await
{
    [Fact]
    public async Task Can_be_used_and_disposed_on_other_threads_and_keeps_its_snapshot()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("k", "before"), ("big", new string('x', 20_000)));

        var tx = env.BeginRead();
        await Task.Yield();
        Assert.Equal("before"u8.ToArray(), tx.OpenTree("t").Get("k"u8));

        // Commits on another thread while the snapshot is in flight.
        await Task.Run(() =>
        {
            for (var i = 0; i < 20; i++) PutAndCommit(env, "t", ("k", $"after-{i}"), ("big", new string('y', 20_000 + i)));
            env.Checkpoint();
        }, TestContext.Current.CancellationToken);

        await Task.Run(() =>
        {
            var tree = tx.OpenTree("t");
            Assert.Equal("before"u8.ToArray(), tree.Get("k"u8));
            Assert.Equal(20_000, tree.Get("big"u8)!.Length);
        }, TestContext.Current.CancellationToken);
        await Task.Yield();
        var cursor = tx.OpenTree("t").CreateCursor();
        Assert.True(cursor.SeekLast());
        Assert.Equal("k"u8.ToArray(), cursor.Key.ToArray());
        await Task.Run(tx.Dispose, TestContext.Current.CancellationToken);

        Assert.Equal("after-19", GetString(env, "t", "k"));
    }
}
