using Storage.Tests.Support;

namespace Storage.Tests.Damage;

/// <summary>
/// A deterministic history of transactions over three trees: small values ("small"), values near a page
/// ("medium", leaf-sized), and overflow values of one to several pages ("large"), with updates and deletes. The
/// model after any transaction is computed by replaying the history, so a damaged environment that opens at some
/// transaction k can be compared with exactly what k committed.
/// </summary>
internal static class DamageWorkload
{
    public static readonly string[] Trees = ["small", "medium", "large"];

    /// <summary>The operations of transaction <paramref name="transaction"/> (1-based): a null value deletes.</summary>
    public static IEnumerable<(string Tree, byte[] Key, byte[]? Value)> Operations(int transaction)
    {
        var random = new Random(transaction * 7919 + 17);
        // Every transaction changes something, so that transaction ids follow the history.
        yield return ("small", TestData.Key("last"), TestData.Value(transaction, 8));
        var count = 3 + random.Next(12);
        for (var i = 0; i < count; i++)
        {
            var roll = random.Next(100);
            var tree = roll < 60 ? "small" : roll < 85 ? "medium" : "large";
            var key = TestData.Key($"{tree}-{random.Next(tree == "large" ? 40 : 400):D4}");
            if (random.Next(100) < 15)
            {
                yield return (tree, key, null);
                continue;
            }
            var length = tree switch
            {
                "small" => 8 + random.Next(120),
                "medium" => 400 + random.Next(1600),
                _ => 2100 + random.Next(38_000),
            };
            yield return (tree, key, TestData.Value(transaction * 1000 + i, length));
        }
    }

    /// <summary>Commits transaction <paramref name="transaction"/>.</summary>
    public static void Commit(StorageEnvironment env, int transaction)
    {
        using var tx = env.BeginWrite();
        foreach (var (name, key, value) in Operations(transaction))
        {
            var tree = tx.OpenOrCreateTree(name);
            if (value is null) tree.Delete(key);
            else tree.Put(key, value);
        }
        Assert.Equal(transaction, tx.Commit().TransactionId);
    }

    /// <summary>Every tree's content after transaction <paramref name="transaction"/>.</summary>
    public static Dictionary<string, SortedDictionary<byte[], byte[]>> ModelAt(long transaction)
    {
        var model = Trees.ToDictionary(t => t, _ => OrdinalBytes.NewModel());
        for (var t = 1; t <= transaction; t++)
        {
            foreach (var (tree, key, value) in Operations(t))
            {
                if (value is null) model[tree].Remove(key);
                else model[tree][key] = value;
            }
        }
        return model;
    }
}
