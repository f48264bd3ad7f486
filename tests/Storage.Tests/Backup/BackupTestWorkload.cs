using System.Text;
using Storage.Tests.Support;

namespace Storage.Tests.Backup;

/// <summary>
/// The writer the backup tests commit with, and the model a restore is compared with: transaction <c>i</c> sets key
/// <c>k(i mod keys)</c> of tree "t" to <see cref="Value"/>(i), or deletes it every <paramref name="deleteEvery"/>-th
/// transaction, and sets "last" to <c>i</c>.
/// </summary>
internal sealed class BackupTestWorkload(int keys, int deleteEvery)
{
    /// <summary>Transaction <paramref name="i"/>'s value: tens to hundreds of bytes, an overflow value every 50th.</summary>
    public static byte[] Value(long i) => Enumerable.Range(0, i % 50 == 0 ? 12_000 : 40 + (int)(i % 300)).Select(b => (byte)(b + i)).ToArray();

    private string Key(long i) => $"k{i % keys:D4}";

    /// <summary>The writer's transaction <paramref name="i"/>: one key set or deleted, and "last".</summary>
    public void Commit(StorageEnvironment env, long i)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("t");
        var key = Encoding.ASCII.GetBytes(Key(i));
        if (i % deleteEvery == 0) tree.Delete(key);
        else tree.Put(key, Value(i));
        tree.Put("last"u8, Keys.Int64(i));
        tx.Commit();
    }

    /// <summary>Tree "t" after the writer's transactions 1 to <paramref name="last"/>.</summary>
    public SortedDictionary<string, byte[]> Model(long last)
    {
        var model = new SortedDictionary<string, byte[]>(StringComparer.Ordinal);
        for (var i = 1; i <= last; i++)
        {
            if (i % deleteEvery == 0) model.Remove(Key(i));
            else model[Key(i)] = Value(i);
        }
        model["last"] = Keys.Int64(last);
        return model;
    }

    /// <summary>
    /// The environment in <paramref name="directory"/> is at transaction <paramref name="transaction"/>, its tree "t" is
    /// exactly the model's for the writer's transaction it says it holds ("last"), and the checker finds nothing; returns that.
    /// </summary>
    public long AssertRestored(string directory, long transaction)
    {
        using var env = StorageEnvironment.Open(directory, TestOptions.Small with { CreateIfMissing = false });
        Assert.Equal(transaction, env.GetStats().LastTransactionId);
        using var read = env.BeginRead();
        var tree = read.OpenTree("t");
        var last = Keys.ReadInt64(tree.Get("last"u8));
        var expected = Model(last);
        var actual = tree.Prefix([]).ToList();
        Assert.Equal(expected.Keys, actual.Select(e => Encoding.ASCII.GetString(e.Key)));
        foreach (var (key, value) in actual) Assert.Equal(expected[Encoding.ASCII.GetString(key)], value);
        Assert.True(env.Check().IsConsistent);
        return last;
    }
}
