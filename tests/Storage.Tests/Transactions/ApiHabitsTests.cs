using System.Text;
using Storage.Tests.Support;

namespace Storage.Tests.TransactionTests;

/// <summary>The habits of .NET code the API serves: keys that sort as their values, copies for async code, merged writes that return a value, values filled in place.</summary>
public sealed class Api_habits
{
    [Fact]
    public void Integer_keys_sort_as_their_values()
    {
        var random = new Random(5);
        var longs = Enumerable.Range(0, 5000).Select(_ => random.NextInt64(long.MinValue, long.MaxValue)).Concat([long.MinValue, -1, 0, 1, long.MaxValue]).ToList();
        Assert.Equal(longs.Order(), longs.OrderBy(Keys.Int64, ByteOrder.Instance).ToList());
        Assert.All(longs, v => Assert.Equal(v, Keys.ReadInt64(Keys.Int64(v))));
        var ints = Enumerable.Range(0, 5000).Select(_ => random.Next(int.MinValue, int.MaxValue)).Concat([int.MinValue, -1, 0, int.MaxValue]).ToList();
        Assert.Equal(ints.Order(), ints.OrderBy(Keys.Int32, ByteOrder.Instance).ToList());
        Assert.All(ints, v => Assert.Equal(v, Keys.ReadInt32(Keys.Int32(v))));
        var ulongs = longs.Select(v => (ulong)v).ToList();
        Assert.Equal(ulongs.Order(), ulongs.OrderBy(Keys.UInt64, ByteOrder.Instance).ToList());
        Assert.Equal("Grüße", Keys.ReadUtf8(Keys.Utf8("Grüße")));
        Assert.Throws<ArgumentException>(() => Keys.ReadInt64([1, 2, 3]));
        Assert.Throws<ArgumentException>(() => Keys.ReadUtf8([0xC3]));
    }

    [Fact]
    public void Composite_keys_sort_part_by_part_and_read_back()
    {
        var random = new Random(9);
        string[] texts = ["", "a", "ab", "abc", "a\0", "a\0b", "b", "\0", "zz", "é"];
        var tuples = Enumerable.Range(0, 3000).Select(_ => (Text: texts[random.Next(texts.Length)], Number: random.NextInt64(-1000, 1000), Small: random.Next(-5, 5))).ToList();
        byte[] Encode((string Text, long Number, int Small) t) => new KeyBuilder().Add(t.Text).Add(t.Number).Add(t.Small).ToArray();

        var byValue = tuples.OrderBy(t => Encoding.UTF8.GetBytes(t.Text), ByteOrder.Instance).ThenBy(t => t.Number).ThenBy(t => t.Small).ToList();
        var byKey = tuples.OrderBy(Encode, ByteOrder.Instance).ToList();
        Assert.Equal(byValue, byKey);
        foreach (var t in tuples)
        {
            var reader = new KeyReader(Encode(t));
            Assert.Equal(t, (reader.ReadString(), reader.ReadInt64(), reader.ReadInt32()));
            Assert.True(reader.End);
        }
        var builder = new KeyBuilder().Add([0, 1, 0]).Add(42UL);
        var bytesReader = new KeyReader(builder.AsSpan());
        Assert.Equal([0, 1, 0], bytesReader.ReadBytes());
        Assert.Equal(42UL, bytesReader.ReadUInt64());
        Assert.Equal(0, builder.Clear().Length);
    }

    [Fact]
    public async Task A_secondary_index_kept_in_the_same_transaction_is_read_by_prefix_across_awaits()
    {
        using var dir = new TempDirectory();
        await using var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        var customers = new[] { "ann", "annette", "bob" };
        for (var order = 1; order <= 30; order++)
        {
            var customer = customers[order % customers.Length];
            // The operation's value comes back once the merged commit is durable.
            var written = await env.WriteAsync(tx =>
            {
                tx.OpenOrCreateTree("orders").Put(Keys.Int64(order), Encoding.UTF8.GetBytes($"{{\"customer\":\"{customer}\",\"order\":{order}}}"));
                tx.OpenOrCreateTree("orders-by-customer").Put(new KeyBuilder().Add(customer).Add((long)order).AsSpan(), []);
                return order;
            }, TestContext.Current.CancellationToken);
            Assert.Equal(order, written);
        }

        using var read = env.BeginRead();
        var index = read.OpenTree("orders-by-customer");
        var orders = read.OpenTree("orders");
        var ann = new List<long>();
        // "ann" must not take "annette"'s orders: the terminated part makes the prefix exact.
        foreach (var (key, _) in index.ReadPrefix(new KeyBuilder().Add("ann").AsSpan()))
        {
            await Task.Yield();
            var reader = new KeyReader(key);
            Assert.Equal("ann", reader.ReadString());
            var order = reader.ReadInt64();
            Assert.Contains("\"customer\":\"ann\"", Encoding.UTF8.GetString(orders.Get(Keys.Int64(order))!));
            ann.Add(order);
        }
        Assert.Equal(Enumerable.Range(1, 30).Where(o => o % 3 == 0).Select(o => (long)o), ann);

        var copied = orders.Range(Keys.Int64(10), Keys.Int64(20)).ToList();
        await Task.Yield();
        Assert.Equal(Enumerable.Range(10, 10).Select(o => (long)o), copied.Select(e => Keys.ReadInt64(e.Key)));
        Assert.Equal(5, orders.Prefix([]).ToList(limit: 5).Count);
        var reversed = orders.ReadRange(Keys.Int64(25), [], reverse: true).Select(e => Keys.ReadInt64(e.Key)).ToList();
        Assert.Equal([30L, 29, 28, 27, 26, 25], reversed);
    }

    [Theory]
    [InlineData(100)]
    [InlineData(20_000)]
    public void A_value_filled_in_place_is_committed_and_survives_a_crash(int length)
    {
        using var dir = new TempDirectory();
        var expected = Enumerable.Range(0, length).Select(i => (byte)(i * 7 + 3)).ToArray();
        var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            tree.Put("before"u8, "x"u8);
            var value = tree.Reserve("k"u8, length);
            Assert.Equal(length, value.Length);
            Assert.True(value.IndexOfAnyExcept((byte)0) < 0, "reserved bytes start zeroed");
            expected.CopyTo(value);
            tx.Commit();
        }
        using (var read = env.BeginRead())
        {
            Assert.Equal(expected, read.OpenTree("t").Get("k"u8));
        }
        // Recovery rebuilds the page from the journal alone: the bytes filled in place must be in the entry.
        env.SimulateCrash();
        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        Assert.True(reopened.GetStats().Recovery.ReplayedTransactions > 0);
        using var check = reopened.BeginRead();
        Assert.Equal(expected, check.OpenTree("t").Get("k"u8));
        Assert.True(reopened.Check().IsConsistent);
    }

    [Fact]
    public void Reserve_in_a_read_transaction_or_with_a_negative_length_fails()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        using (var tx = env.BeginWrite())
        {
            tx.CreateTree("t");
            Assert.Throws<ArgumentOutOfRangeException>(() => tx.OpenTree("t").Reserve("k"u8, -1));
            tx.Commit();
        }
        using var read = env.BeginRead();
        Assert.Throws<InvalidOperationException>(() => read.OpenTree("t").Reserve("k"u8, 4));
    }

    private sealed class ByteOrder : IComparer<byte[]>
    {
        public static readonly ByteOrder Instance = new();

        public int Compare(byte[]? x, byte[]? y) => x.AsSpan().SequenceCompareTo(y);
    }
}
