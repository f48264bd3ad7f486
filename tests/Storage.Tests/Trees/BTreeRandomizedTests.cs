using Storage.Trees;

namespace Storage.Tests.Trees;

public sealed class BTreeRandomizedTests
{
    /// <summary>
    /// Random puts, replaces and deletes of random-length keys and values (inline and overflow), checked against a
    /// sorted dictionary: after each batch the tree validates, holds exactly the model's entries in order (cursor
    /// both ways), and the store holds exactly the tree's pages.
    /// </summary>
    [Theory]
    [InlineData(1, 8)]
    [InlineData(2, 64)]
    [InlineData(3, 600)]
    public void Random_operations_match_a_sorted_dictionary(int seed, int maxKeySizeBytes)
    {
        using var fixture = new TreeFixture();
        var model = new SortedDictionary<byte[], byte[]>(ByteArrayComparer.Instance);
        var keys = new List<byte[]>();
        var random = new Random(seed);

        for (int batch = 0; batch < 30; batch++)
        {
            // Grow for the first batches, then shrink, so that both splits and merges get exercised.
            int putPercent = batch < 15 ? 70 : 25;
            for (int op = 0; op < 1000; op++)
            {
                if (random.Next(100) < putPercent || keys.Count == 0)
                {
                    var key = keys.Count > 0 && random.Next(4) == 0 ? keys[random.Next(keys.Count)] : RandomKey(random, maxKeySizeBytes);
                    var value = RandomValue(random);
                    fixture.Tree.Put(key, value);
                    if (!model.ContainsKey(key))
                    {
                        keys.Add(key);
                    }
                    model[key] = value;
                }
                else
                {
                    int index = random.Next(keys.Count);
                    var key = keys[index];
                    Assert.True(fixture.Tree.Delete(key));
                    Assert.False(fixture.Tree.Delete(key));
                    model.Remove(key);
                    keys[index] = keys[^1];
                    keys.RemoveAt(keys.Count - 1);
                }
            }
            fixture.Tree.Validate();
            AssertSameContent(fixture, model);
            fixture.Store.Commit();
        }

        foreach (var key in keys)
        {
            Assert.True(fixture.Tree.Delete(key));
        }
        fixture.Check();
        Assert.Equal(1, fixture.Store.AllocatedPageCount);
    }

    private static void AssertSameContent(TreeFixture fixture, SortedDictionary<byte[], byte[]> model)
    {
        Assert.Equal(model.Count, fixture.State.Entries);
        var cursor = fixture.Tree.CreateCursor();
        bool positioned = cursor.SeekFirst();
        foreach (var (key, value) in model)
        {
            Assert.True(positioned);
            Assert.True(cursor.Key.SequenceEqual(key));
            Assert.True(cursor.Value.SequenceEqual(value));
            positioned = cursor.MoveNext();
        }
        Assert.False(positioned);

        positioned = cursor.SeekLast();
        foreach (var (key, _) in model.Reverse())
        {
            Assert.True(positioned);
            Assert.True(cursor.Key.SequenceEqual(key));
            positioned = cursor.MovePrevious();
        }
        Assert.False(positioned);

        int treePages = 0;
        fixture.Tree.VisitPages((_, type, _, count) => treePages += type == Paging.PageFlags.Overflow ? count : 1);
        Assert.Equal(fixture.Store.AllocatedPageCount, treePages);
    }

    private static byte[] RandomKey(Random random, int maxKeySizeBytes)
    {
        // A small alphabet makes shared prefixes (and prefix keys like "ab" < "abc") common.
        var key = new byte[random.Next(TreeLimits.MinKeySizeBytes, maxKeySizeBytes + 1)];
        for (int i = 0; i < key.Length; i++)
        {
            key[i] = (byte)random.Next(3);
        }
        if (key.Length > 4)
        {
            random.NextBytes(key.AsSpan(key.Length - 4));
        }
        return key;
    }

    private static byte[] RandomValue(Random random)
    {
        int sizeBytes = random.Next(100) switch
        {
            < 3 => random.Next(TreeLimits.MaxInlineValueSizeBytes + 1, 40_000),
            < 10 => random.Next(1000, TreeLimits.MaxInlineValueSizeBytes + 1),
            < 15 => 0,
            _ => random.Next(1, 200),
        };
        var value = new byte[sizeBytes];
        random.NextBytes(value);
        return value;
    }
}
