using Storage.Tests.Support;

namespace Storage.Tests.TransactionTests;

/// <summary>
/// Tree.GetMany looks a batch of keys up together (sorted, reading each level's pages ahead); it must report
/// exactly what one TryGet per key reports, wherever the pages are: the data file, versions not yet flushed,
/// or the write transaction's own changes.
/// </summary>
public sealed class GetMany
{
    private const string TreeName = "t";

    [Fact]
    public void Reports_what_TryGet_reports_for_every_key_in_key_order()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        var model = Fill(env, count: 20_000, seed: 1);
        env.Checkpoint();

        var random = new Random(7);
        var present = model.Keys.ToArray();
        var keys = new List<byte[]>();
        for (var i = 0; i < 3_000; i++) keys.Add(present[random.Next(present.Length)]);
        for (var i = 0; i < 1_000; i++) keys.Add(Key(random.Next(1_000_000, 2_000_000)));
        keys.Add(present[0]);
        keys.Add(present[0]); // a key given twice is reported twice
        keys.Add([0x00]);
        keys.Add(Enumerable.Repeat((byte)0xFF, 1024).ToArray());

        using var read = env.BeginRead();
        var tree = read.OpenTree(TreeName);
        Assert.True(tree.GetStats().Depth >= 3, "the batch should cross branch levels");
        var reported = new List<(int Index, byte[] Value)>();
        var found = tree.GetMany(AsMemory(keys), (value, index) => reported.Add((index, value.ToArray())));

        var expected = keys.Select((key, index) => (Index: index, Value: tree.Get(key)))
            .Where(entry => entry.Value is not null)
            .ToList();
        Assert.Equal(expected.Count, found);
        Assert.Equal(expected.Count, reported.Count);
        Assert.Equal(
            expected.OrderBy(entry => entry.Index).Select(entry => (entry.Index, entry.Value!)),
            reported.OrderBy(entry => entry.Index));
        // Reported in key order.
        for (var i = 1; i < reported.Count; i++)
        {
            Assert.True(OrdinalBytes.Instance.Compare(keys[reported[i - 1].Index], keys[reported[i].Index]) <= 0);
        }
    }

    [Fact]
    public void Copies_values_in_the_order_of_the_keys_with_null_for_missing_ones()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        var model = Fill(env, count: 500, seed: 2);

        using var read = env.BeginRead();
        var tree = read.OpenTree(TreeName);
        var values = tree.GetMany([Key(400), Key(9_999), Key(3), Key(400)]);
        Assert.Equal([model[Key(400)], null, model[Key(3)], model[Key(400)]], values);
        Assert.Empty(tree.GetMany([]));
        Assert.Equal(0, tree.GetMany([], (_, _) => Assert.Fail("no keys, no calls")));
    }

    [Fact]
    public void Sees_versions_not_yet_in_the_data_file_and_the_writers_own_changes()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        var model = Fill(env, count: 5_000, seed: 3);
        env.Checkpoint();
        // Committed after the checkpoint: these versions live in scratch memory, not the data file.
        using (var tx = env.BeginWrite())
        {
            var tree = tx.OpenTree(TreeName);
            for (var i = 0; i < 5_000; i += 7)
            {
                model[Key(i)] = TestData.Value(i + 100, 50);
                tree.Put(Key(i), model[Key(i)]);
            }
            tx.Commit();
        }

        var keys = Enumerable.Range(0, 5_000).Select(Key).ToList();
        using (var read = env.BeginRead())
        {
            Assert.Equal(keys.Select(key => model[key]), read.OpenTree(TreeName).GetMany(AsMemory(keys)));
        }

        using (var write = env.BeginWrite())
        {
            var tree = write.OpenTree(TreeName);
            for (var i = 0; i < 5_000; i += 11)
            {
                Assert.True(tree.Delete(Key(i)));
                model.Remove(Key(i));
            }
            tree.Put(Key(6_000), "new"u8);
            model[Key(6_000)] = "new"u8.ToArray();
            keys.Add(Key(6_000));

            var values = tree.GetMany(AsMemory(keys));
            Assert.Equal(keys.Select(key => model.GetValueOrDefault(key)), values);
        }
    }

    [Fact]
    public void Reads_values_in_overflow_runs()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        var sizes = new[] { 2_049, 8_161, 20_000, 100_000, 10 };
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree(TreeName);
            for (var i = 0; i < sizes.Length; i++) tree.Put(Key(i), TestData.Value(i + 1, sizes[i]));
            tx.Commit();
        }
        env.Checkpoint();

        using var read = env.BeginRead();
        var values = read.OpenTree(TreeName).GetMany(AsMemory(Enumerable.Range(0, sizes.Length).Reverse().Select(Key)));
        Assert.Equal(Enumerable.Range(0, sizes.Length).Reverse().Select(i => TestData.Value(i + 1, sizes[i])), values);
    }

    [Fact]
    public void Refuses_a_bad_key_before_looking_anything_up()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        Fill(env, count: 10, seed: 4);
        using var read = env.BeginRead();
        var tree = read.OpenTree(TreeName);

        var calls = 0;
        Assert.Throws<ArgumentException>(() => tree.GetMany([Key(1), Array.Empty<byte>()], (_, _) => calls++));
        Assert.Throws<ArgumentException>(() => tree.GetMany([Key(1), new byte[1025]], (_, _) => calls++));
        Assert.Equal(0, calls);
        Assert.NotNull(tree.Get(Key(1)));
    }

    [Fact]
    public void Stops_when_the_callback_changes_the_tree()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        Fill(env, count: 10, seed: 5);
        using var write = env.BeginWrite();
        var tree = write.OpenTree(TreeName);
        var calls = 0;
        Assert.Throws<InvalidOperationException>(() => tree.GetMany([Key(1), Key(2)], (_, _) =>
        {
            calls++;
            tree.Put(Key(100), "x"u8);
        }));
        Assert.Equal(1, calls);
    }

    [Fact]
    public void Refuses_a_finished_transaction()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        Fill(env, count: 10, seed: 6);
        var read = env.BeginRead();
        var tree = read.OpenTree(TreeName);
        read.Dispose();
        var error = Assert.Throws<StorageException>(() => tree.GetMany([Key(1)]));
        Assert.Equal(StorageErrorCode.TransactionNotUsable, error.ErrorCode);
    }

    private static SortedDictionary<byte[], byte[]> Fill(StorageEnvironment env, int count, int seed)
    {
        var model = OrdinalBytes.NewModel();
        using var tx = env.BeginWrite();
        var tree = tx.CreateTree(TreeName);
        for (var i = 0; i < count; i++)
        {
            var value = TestData.Value(seed * 1_000_000 + i, 100);
            tree.Put(Key(i), value);
            model[Key(i)] = value;
        }
        tx.Commit();
        return model;
    }

    /// <summary>Long keys (100 bytes), so that a few thousand entries already make a tree three levels deep.</summary>
    private static byte[] Key(int i) => TestData.Key($"key-{i:D8}".PadRight(100, '.'));

    private static ReadOnlyMemory<byte>[] AsMemory(IEnumerable<byte[]> keys) => keys.Select(key => (ReadOnlyMemory<byte>)key).ToArray();
}
