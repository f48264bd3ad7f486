using System.Buffers.Binary;
using Storage.Tests.Support;

namespace Storage.Tests.TransactionTests;

public sealed class A_reader_held_across_many_commits
{
    [Fact]
    public void Keeps_scratch_at_two_versions_of_each_changed_page_not_one_per_commit()
    {
        using var temp = new TempDirectory();
        // Nothing is flushed: every version lives in scratch, as while a reader holds the flusher back.
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            for (var i = 0; i < 300; i++) tree.Put(Key(i), Value(i, generation: 0));
            tx.Commit();
        }
        using var reader = env.BeginRead();

        Rewrite(env, generations: 1..30);
        var after30 = env.GetStats().Memory.ScratchBytes;
        Rewrite(env, generations: 31..330);
        var after330 = env.GetStats().Memory.ScratchBytes;

        // The same pages change in every commit: the reader's version and the newest of each, however many commits.
        Assert.Equal(after30, after330);
        var tree0 = reader.OpenTree("t");
        for (var i = 0; i < 300; i++) Assert.Equal(Value(i, generation: 0), tree0.Get(Key(i)));
    }

    [Fact]
    public void Gives_back_what_it_kept_once_it_ends_even_if_those_pages_never_change_again()
    {
        using var temp = new TempDirectory();
        var options = TestOptions.Small with { FlushInterval = TimeSpan.FromMilliseconds(1) };
        using var env = StorageEnvironment.Open(temp.Path, options);
        using (var tx = env.BeginWrite())
        {
            var created = tx.CreateTree("t");
            for (var i = 0; i < 300; i++) created.Put(Key(i), Value(i, generation: 0));
            tx.Commit();
        }
        env.Checkpoint();
        var oldest = env.BeginRead();
        var middle = env.BeginRead();
        Rewrite(env, generations: 1..5);
        var held = env.BeginRead();
        Rewrite(env, generations: 6..10);
        var withThree = env.GetStats().Memory.ScratchBytes;

        // The snapshot in the middle ends; nothing changes those pages again, and the oldest reader still holds the flush back.
        held.Dispose();
        middle.Dispose();
        env.Checkpoint();
        var withOne = env.GetStats().Memory.ScratchBytes;
        Assert.True(withOne < withThree, $"scratch {withOne} after the newer readers ended, {withThree} before");
        var tree = oldest.OpenTree("t");
        for (var i = 0; i < 300; i++) Assert.Equal(Value(i, generation: 0), tree.Get(Key(i)));
        oldest.Dispose();
    }

    private static void Rewrite(StorageEnvironment env, Range generations)
    {
        for (var g = generations.Start.Value; g <= generations.End.Value; g++)
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenTree("t");
            // Same keys, same sizes: the same pages change in every commit, and no page splits.
            for (var i = 0; i < 300; i += 7) tree.Put(Key(i), Value(i, g));
            tx.Commit();
        }
    }

    private static byte[] Key(int i) => TestData.Key($"key-{i:D5}");

    private static byte[] Value(int i, int generation)
    {
        var value = new byte[40];
        BinaryPrimitives.WriteInt32LittleEndian(value, i);
        BinaryPrimitives.WriteInt32LittleEndian(value.AsSpan(4), generation);
        return value;
    }
}

public sealed class Readers_held_at_several_points
{
    [Fact]
    public async Task Each_see_exactly_their_snapshot_on_their_own_threads_while_commits_prune_and_the_flusher_writes()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Busy);
        var model = OrdinalBytes.NewModel();
        using (var tx = env.BeginWrite())
        {
            tx.CreateTree("t");
            tx.Commit();
        }

        var random = new Random(11);
        var readers = new List<Task>();
        using var stop = new CancellationTokenSource();
        var checks = new int[8];
        for (var commit = 1; commit <= 160; commit++)
        {
            using (var tx = env.BeginWrite())
            {
                var tree = tx.OpenTree("t");
                for (var op = 0; op < 30; op++)
                {
                    var key = TestData.Key($"k{random.Next(400):D4}");
                    if (random.Next(4) == 0)
                    {
                        tree.Delete(key);
                        model.Remove(key);
                    }
                    else
                    {
                        var value = TestData.Value(random.Next(), random.Next(8) == 0 ? 3000 : 20 + random.Next(60));
                        tree.Put(key, value);
                        model[key] = value;
                    }
                }
                tx.Commit();
            }
            if (commit % 20 == 0)
            {
                // A reader on this commit, checked over and over on a thread of its own until the writer is done.
                var snapshot = env.BeginRead();
                var expected = OrdinalBytes.Copy(model);
                var index = readers.Count;
                readers.Add(Task.Run(() =>
                {
                    try
                    {
                        do
                        {
                            TreeAssert.Equal(expected, snapshot.OpenTree("t"), $"the reader begun after commit {commit}");
                            Interlocked.Increment(ref checks[index]);
                        }
                        while (!stop.IsCancellationRequested);
                    }
                    finally
                    {
                        snapshot.Dispose();
                    }
                }, TestContext.Current.CancellationToken));
            }
            if (commit % 50 == 0) env.Checkpoint();
        }
        stop.Cancel();
        await Task.WhenAll(readers).WaitAsync(TimeSpan.FromSeconds(120), TestContext.Current.CancellationToken);
        Assert.All(checks, count => Assert.True(count > 0));
        using var fresh = env.BeginRead();
        TreeAssert.Equal(model, fresh.OpenTree("t"), "a new reader");
    }
}
