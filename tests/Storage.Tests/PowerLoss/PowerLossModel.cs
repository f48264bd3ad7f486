using System.Collections.Immutable;
using Storage.Tests.Support;

namespace Storage.Tests.PowerLoss;

/// <summary>
/// The content of the trees after one transaction of a seeded random history: small values in "t", overflow values
/// of one to several pages in "o", puts and deletes. Immutable, so a history keeps one per transaction cheaply; values
/// are kept as (seed, length) and made again when compared.
/// </summary>
internal sealed class PowerLossModel
{
    private static readonly string[] s_trees = ["t", "o"];

    private readonly ImmutableDictionary<string, ImmutableSortedDictionary<byte[], (int Seed, int Length)>> _trees;

    private PowerLossModel(ImmutableDictionary<string, ImmutableSortedDictionary<byte[], (int Seed, int Length)>> trees) => _trees = trees;

    public static PowerLossModel Empty { get; } = new(s_trees.ToImmutableDictionary(t => t, _ => ImmutableSortedDictionary.Create<byte[], (int, int)>(OrdinalBytes.Instance)));

    public static List<(string Tree, byte[] Key, (int Seed, int Length)? Value)> Operations(int seed, int transaction)
    {
        var random = new Random(seed * 1_000_003 + transaction);
        // Every transaction changes something (a transaction that changes nothing commits nothing and takes no id).
        var operations = new List<(string, byte[], (int, int)?)> { ("t", TestData.Key("last"), (transaction, 8)) };
        var count = random.Next(8);
        for (var i = 0; i < count; i++)
        {
            var overflow = random.Next(100) < 20;
            var tree = overflow ? "o" : "t";
            var key = TestData.Key($"{tree}{random.Next(overflow ? 25 : 300):D3}");
            if (random.Next(100) < 15)
            {
                operations.Add((tree, key, null));
                continue;
            }
            var length = overflow ? 2100 + random.Next(28_000) : 10 + random.Next(190);
            operations.Add((tree, key, (transaction * 100 + i, length)));
        }
        return operations;
    }

    public PowerLossModel With(List<(string Tree, byte[] Key, (int Seed, int Length)? Value)> operations)
    {
        var trees = _trees;
        foreach (var (tree, key, value) in operations)
        {
            var content = trees[tree];
            trees = trees.SetItem(tree, value is null ? content.Remove(key) : content.SetItem(key, value.Value));
        }
        return new PowerLossModel(trees);
    }

    public void AssertEqual(Transaction tx, string context)
    {
        foreach (var (name, expected) in _trees)
        {
            if (!tx.TryOpenTree(name, out var tree))
            {
                if (expected.Count > 0) throw new Xunit.Sdk.XunitException($"{context}: tree '{name}' is missing");
                continue;
            }
            var cursor = tree.CreateCursor();
            var index = 0;
            using var wanted = expected.GetEnumerator();
            for (var ok = cursor.SeekFirst(); ok; ok = cursor.MoveNext(), index++)
            {
                if (!wanted.MoveNext()) throw new Xunit.Sdk.XunitException($"{context}: tree '{name}' has more than {expected.Count} entries ({TestData.Show(cursor.Key)})");
                var (key, (seed, length)) = wanted.Current;
                if (!cursor.Key.SequenceEqual(key)) throw new Xunit.Sdk.XunitException($"{context}: tree '{name}' entry {index} is {TestData.Show(cursor.Key)}, expected {TestData.Show(key)}");
                if (!cursor.Value.SequenceEqual(TestData.Value(seed, length))) throw new Xunit.Sdk.XunitException($"{context}: tree '{name}' value of {TestData.Show(key)} differs");
            }
            if (wanted.MoveNext()) throw new Xunit.Sdk.XunitException($"{context}: tree '{name}' has {index} entries, expected {expected.Count}");
        }
    }
}
