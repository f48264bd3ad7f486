namespace Storage.Tests.Support;

/// <summary>Compares a tree with a model, walking it forwards and backwards, and says where they differ.</summary>
internal static class TreeAssert
{
    public static List<KeyValuePair<byte[], byte[]>> ReadAll(Tree tree, bool reverse = false)
    {
        var entries = new List<KeyValuePair<byte[], byte[]>>();
        var cursor = tree.CreateCursor();
        for (var ok = reverse ? cursor.SeekLast() : cursor.SeekFirst(); ok; ok = reverse ? cursor.MovePrevious() : cursor.MoveNext())
        {
            entries.Add(new(cursor.Key.ToArray(), cursor.Value.ToArray()));
        }
        return entries;
    }

    public static List<KeyValuePair<byte[], byte[]>> ReadRange(TreeRange range)
    {
        var entries = new List<KeyValuePair<byte[], byte[]>>();
        foreach (var entry in range) entries.Add(new(entry.Key.ToArray(), entry.Value.ToArray()));
        return entries;
    }

    /// <summary>The tree holds exactly the model: count, both walk directions, and a point lookup of every key.</summary>
    public static void Equal(IReadOnlyDictionary<byte[], byte[]> model, Tree tree, string context = "")
    {
        var expected = model.OrderBy(p => p.Key, OrdinalBytes.Instance).ToList();
        SameEntries(expected, ReadAll(tree), $"{context} (forward walk)");
        expected.Reverse();
        SameEntries(expected, ReadAll(tree, reverse: true), $"{context} (backward walk)");
        foreach (var (key, value) in model)
        {
            var found = tree.Get(key) ?? throw new Xunit.Sdk.XunitException($"{context}: Get({TestData.Show(key)}) found nothing; expected {value.Length} bytes.");
            if (!found.AsSpan().SequenceEqual(value)) throw new Xunit.Sdk.XunitException($"{context}: Get({TestData.Show(key)}) returned {TestData.Show(found)}, expected {TestData.Show(value)}.");
        }
        if (tree.Count != model.Count) throw new Xunit.Sdk.XunitException($"{context}: Count is {tree.Count}, the model holds {model.Count}.");
    }

    public static void SameEntries(IReadOnlyList<KeyValuePair<byte[], byte[]>> expected, IReadOnlyList<KeyValuePair<byte[], byte[]>> actual, string context)
    {
        for (var i = 0; i < Math.Min(expected.Count, actual.Count); i++)
        {
            if (!expected[i].Key.AsSpan().SequenceEqual(actual[i].Key))
            {
                throw new Xunit.Sdk.XunitException($"{context}: entry {i} has key {TestData.Show(actual[i].Key)}, expected {TestData.Show(expected[i].Key)} ({actual.Count} entries, expected {expected.Count}).");
            }
            if (!expected[i].Value.AsSpan().SequenceEqual(actual[i].Value))
            {
                throw new Xunit.Sdk.XunitException($"{context}: the value of {TestData.Show(actual[i].Key)} is {TestData.Show(actual[i].Value)}, expected {TestData.Show(expected[i].Value)}.");
            }
        }
        if (expected.Count != actual.Count)
        {
            var extra = expected.Count < actual.Count ? $"first extra key {TestData.Show(actual[expected.Count].Key)}" : $"first missing key {TestData.Show(expected[actual.Count].Key)}";
            throw new Xunit.Sdk.XunitException($"{context}: {actual.Count} entries, expected {expected.Count}; {extra}.");
        }
    }
}
