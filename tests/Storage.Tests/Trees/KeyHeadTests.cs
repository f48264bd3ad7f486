using System.Runtime.CompilerServices;
using Storage.Paging;
using Storage.Trees;

namespace Storage.Tests.Trees;

/// <summary>
/// The slots' key heads and the pages' shared key prefix (see <see cref="TreeNodeLayout"/>): lookups and seeks agree with a
/// sorted model for keys that tie on their heads, keys shorter than the prefix plus a head, and probes outside a page's
/// prefix; heads that do not match their keys are corruption.
/// </summary>
public sealed unsafe class KeyHeadTests
{
    /// <summary>
    /// Keys from a three-letter alphabet share long runs, so many tie on the four bytes after a page's prefix and many
    /// are prefixes of others; the stems make pages whose keys share long prefixes (up to 40 bytes). After each batch of
    /// puts and deletes every probe (present keys, their neighbours one byte up and down, truncations, extensions with a
    /// zero byte, fresh keys) gets the model's answer from a lookup, a batched lookup and a seek.
    /// </summary>
    [Theory]
    [InlineData(11, 0)]
    [InlineData(12, 8)]
    [InlineData(13, 40)]
    public void Lookups_and_seeks_match_a_sorted_model(int seed, int stemBytes)
    {
        using var fixture = new TreeFixture();
        var random = new Random(seed);
        var stems = Enumerable.Range(0, 3).Select(_ => RandomBytes(random, stemBytes, stemBytes, alphabet: 3)).ToArray();
        var model = new SortedDictionary<byte[], byte[]>(ByteArrayComparer.Instance);

        for (int batch = 0; batch < 16; batch++)
        {
            int putPercent = batch < 10 ? 80 : 30;
            for (int op = 0; op < 800; op++)
            {
                if (random.Next(100) < putPercent || model.Count == 0)
                {
                    var key = stems[random.Next(stems.Length)].Concat(RandomBytes(random, 1, 14, alphabet: 3)).ToArray();
                    var value = RandomBytes(random, 0, 40, alphabet: 256);
                    fixture.Tree.Put(key, value);
                    model[key] = value;
                }
                else
                {
                    var key = model.Keys.ElementAt(random.Next(model.Count));
                    Assert.True(fixture.Tree.Delete(key));
                    model.Remove(key);
                }
            }
            fixture.Tree.Validate();
            AssertProbes(fixture, model, Probes(random, model, stems));
            fixture.Store.Commit();
        }
    }

    [Fact]
    public void Keys_shorter_than_the_prefix_and_a_head_sort_before_their_extensions()
    {
        using var fixture = new TreeFixture();
        var model = new SortedDictionary<byte[], byte[]>(ByteArrayComparer.Instance);
        // "abcdef" with 0 to 6 zero bytes after it: equal heads once padded, told apart by their lengths.
        for (int zeros = 0; zeros <= 6; zeros++)
        {
            var key = "abcdef"u8.ToArray().Concat(new byte[zeros]).ToArray();
            fixture.Tree.Put(key, [(byte)zeros]);
            model[key] = [(byte)zeros];
        }
        fixture.Tree.Validate();
        var probes = model.Keys.SelectMany(key => new[] { key, key[..^1], key.Append((byte)1).ToArray() }).ToList();
        probes.Add("abcdee"u8.ToArray());
        probes.Add("abcdeg"u8.ToArray());
        AssertProbes(fixture, model, probes);
    }

    [Fact]
    public void A_leaf_shares_the_prefix_of_its_keys_after_splits()
    {
        using var fixture = new TreeFixture();
        for (long i = 0; i < 20_000; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i * 7919 % 20_000), TreeFixture.Value(i, 20));
        }
        fixture.Tree.Validate();
        // Every leaf's prefix is what its first and last keys share: splits and moves recompute it, not only shorten it.
        var leaves = new List<long>();
        fixture.Tree.VisitPages((page, type, _, _) =>
        {
            if (type == PageFlags.Leaf) leaves.Add(page);
        });
        Assert.True(leaves.Count > 10);
        foreach (var pageNumber in leaves)
        {
            var leaf = TreePage.Open(fixture.Store.GetPage(pageNumber), pageNumber);
            Assert.Equal(TreeNodeLayout.CommonPrefixBits(leaf.GetKey(0), leaf.GetKey(leaf.Count - 1)), leaf.KeyPrefixBits);
        }
    }

    [Fact]
    public void Heads_and_prefixes_are_counted_in_bits()
    {
        // "0123" and "0133" (0x30 0x31 0x32 0x33 / 0x30 0x31 0x33 0x33) share 2 bytes and the top 7 bits of the third.
        Assert.Equal(23, TreeNodeLayout.CommonPrefixBits("0123"u8, "0133"u8));
        Assert.Equal(16, TreeNodeLayout.CommonPrefixBits("01"u8, "0123"u8));
        Assert.Equal(0, TreeNodeLayout.CommonPrefixBits([0x80], [0x00]));
        // The 19 bits after a 23-bit prefix of "0123": the last bit of 0x32 (0), then 0x33, then ten zero bits.
        Assert.Equal((0u << 18) | (0x33u << 10), TreeNodeLayout.KeyHead("0123"u8, 23));
        Assert.Equal((1u << 18) | (0x33u << 10), TreeNodeLayout.KeyHead("0133"u8, 23));
        Assert.Equal(0x3031u << 3 | (0x32u >> 5), TreeNodeLayout.KeyHead("0123"u8, 0));
        Assert.Equal(0u, TreeNodeLayout.KeyHead("01"u8, 16));
        // Against a 23-bit prefix taken from "0133": inside it, shorter, below, above.
        Assert.Equal(0, TreeNodeLayout.ComparePrefix("0123"u8, "0133"u8, 23));
        Assert.True(TreeNodeLayout.ComparePrefix("01"u8, "0133"u8, 23) < 0);
        Assert.True(TreeNodeLayout.ComparePrefix("010"u8, "0133"u8, 23) < 0);
        Assert.True(TreeNodeLayout.ComparePrefix("014"u8, "0133"u8, 23) > 0);
        Assert.True(TreeNodeLayout.ComparePrefix("1"u8, "0133"u8, 23) > 0);
    }

    [Fact]
    public void A_key_head_that_does_not_match_its_key_is_corruption()
    {
        using var fixture = new TreeFixture();
        for (long i = 0; i < 2_000; i++) fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 20));
        var leaf = fixture.Tree.DescendToLeaf(TreeFixture.Key(500), new TreePath()).PageNumber;
        byte* page = fixture.Store.RawPage(leaf);
        int index = TreePage.Open(page, leaf).SearchLeaf(TreeFixture.Key(500), out _);
        byte* slot = page + PageLayout.HeaderSizeBytes + index * TreeNodeLayout.SlotSizeBytes;
        Unsafe.WriteUnaligned(slot, Unsafe.ReadUnaligned<uint>(slot) ^ (1u << 20)); // a bit of the head

        var exception = Assert.Throws<StorageCorruptedException>(fixture.Tree.Validate);
        Assert.Equal(leaf, exception.PageNumber);
        Assert.Contains("key head", exception.Message);
    }

    [Fact]
    public void A_shared_prefix_longer_than_any_key_is_corruption()
    {
        using var fixture = new TreeFixture();
        for (long i = 0; i < 2_000; i++) fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 20));
        var leaf = fixture.Tree.DescendToLeaf(TreeFixture.Key(500), new TreePath()).PageNumber;
        ((PageHeader*)fixture.Store.RawPage(leaf))->KeyPrefixBits = TreeNodeLayout.MaxKeyPrefixBits + 1;

        var exception = Assert.Throws<StorageCorruptedException>(() => fixture.Tree.TryGet(TreeFixture.Key(500), out _));
        Assert.Equal(leaf, exception.PageNumber);
    }

    private static void AssertProbes(TreeFixture fixture, SortedDictionary<byte[], byte[]> model, IReadOnlyList<byte[]> probes)
    {
        var sorted = model.Keys.ToArray();
        var cursor = fixture.Tree.CreateCursor();
        var batch = probes.Select(p => (ReadOnlyMemory<byte>)p).ToArray();
        var batchFound = new bool[probes.Count];
        fixture.Tree.GetMany(batch, (value, index) =>
        {
            Assert.True(value.SequenceEqual(model[probes[index]]));
            batchFound[index] = true;
        });
        for (int i = 0; i < probes.Count; i++)
        {
            var probe = probes[i];
            bool present = model.TryGetValue(probe, out var expected);
            Assert.Equal(present, fixture.Tree.TryGet(probe, out var value));
            Assert.Equal(present, batchFound[i]);
            if (present) Assert.True(value.SequenceEqual(expected));

            int at = Array.BinarySearch(sorted, probe, ByteArrayComparer.Instance);
            if (at < 0) at = ~at;
            bool positioned = cursor.Seek(probe);
            Assert.Equal(at < sorted.Length, positioned);
            if (positioned) Assert.True(cursor.Key.SequenceEqual(sorted[at]), $"seek {Convert.ToHexString(probe)}");
        }
    }

    private static List<byte[]> Probes(Random random, SortedDictionary<byte[], byte[]> model, byte[][] stems)
    {
        var probes = new List<byte[]>();
        for (int i = 0; i < 300 && model.Count > 0; i++)
        {
            var key = model.Keys.ElementAt(random.Next(model.Count));
            probes.Add(key);
            probes.Add(key.Append((byte)0).ToArray());
            if (key.Length > 1) probes.Add(key[..random.Next(1, key.Length)]);
            var up = (byte[])key.Clone();
            up[^1]++;
            probes.Add(up);
            var down = (byte[])key.Clone();
            down[^1]--;
            if (down.Length > 0) probes.Add(down);
        }
        for (int i = 0; i < 100; i++)
        {
            probes.Add(stems[random.Next(stems.Length)].Concat(RandomBytes(random, 0, 14, alphabet: 4)).Where((_, n) => n < TreeLimits.MaxKeySizeBytes).ToArray());
        }
        probes.RemoveAll(p => p.Length < TreeLimits.MinKeySizeBytes);
        return probes;
    }

    private static byte[] RandomBytes(Random random, int minLength, int maxLength, int alphabet)
    {
        var bytes = new byte[random.Next(minLength, maxLength + 1)];
        for (int i = 0; i < bytes.Length; i++) bytes[i] = (byte)random.Next(alphabet);
        return bytes;
    }
}
