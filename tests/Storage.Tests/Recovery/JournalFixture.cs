using Storage.Tests.Support;

namespace Storage.Tests.RecoveryTests;

/// <summary>
/// An environment left by a crash: transactions 1..Synced are in the synced data file (a checkpoint), the
/// rest only in the journal (nothing flushed or synced after the checkpoint, then SimulateCrash). Each
/// transaction t writes a few keys of its own, some with values that make the entry span several 4 KiB
/// blocks, and sets "last" = t; Expected(t) is the tree's content after transaction t. Copies of the
/// directory are damaged by the tests, the original is kept.
/// </summary>
internal sealed class JournalFixture : IDisposable
{
    public const string Tree = "t";

    private JournalFixture(TempDirectory root, string original, int synced, int total, List<JournalEntryInfo> chain)
    {
        Root = root;
        Original = original;
        Synced = synced;
        Total = total;
        Chain = chain;
    }

    public TempDirectory Root { get; }

    /// <summary>The undamaged environment (closed).</summary>
    public string Original { get; }

    public int Synced { get; }

    public int Total { get; }

    /// <summary>The journal entries of transactions Synced+1 .. Total, in order.</summary>
    public List<JournalEntryInfo> Chain { get; }

    public static StorageOptions Options => TestOptions.JournalOnly with { MinJournalFileSizeBytes = 64 << 10, MaxJournalFileSizeBytes = 256 << 10 };

    public static JournalFixture Create(int synced, int total, Func<int, int> bigValues)
    {
        var root = new TempDirectory("journal");
        var original = root.Combine("original");
        var env = StorageEnvironment.Open(original, Options);
        for (var t = 1; t <= total; t++)
        {
            using (var tx = env.BeginWrite())
            {
                var tree = tx.OpenOrCreateTree(Tree);
                foreach (var (key, value) in Writes(t, bigValues(t))) tree.Put(key, value);
                Assert.Equal(t + 0L, tx.Commit().TransactionId);
            }
            if (t == synced) env.Checkpoint();
        }
        Assert.Equal(synced, env.GetStats().LastSyncedTransactionId);
        env.SimulateCrash();
        var chain = JournalInspector.Chain(original, synced, total);
        return new JournalFixture(root, original, synced, total, chain);
    }

    private static IEnumerable<(byte[] Key, byte[] Value)> Writes(int t, int bigValues)
    {
        yield return (TestData.Key("last"), TestData.Value(t.ToString(System.Globalization.CultureInfo.InvariantCulture)));
        yield return (TestData.Key($"tx-{t:D4}-small"), TestData.Value(t, 40));
        // Overwrite an earlier transaction's key, so that a torn entry would show as a wrong value.
        if (t > 1) yield return (TestData.Key($"tx-{t - 1:D4}-small"), TestData.Value(t * 1000, 41));
        // Values of about a page and a half each: random bytes, inline-sized so they live in leaves (diffs), and big ones.
        for (var i = 0; i < bigValues; i++) yield return (TestData.Key($"tx-{t:D4}-big-{i}"), TestData.Value(t * 10 + i + 1, 2000));
    }

    /// <summary>The tree's content after transaction t (0: no tree yet).</summary>
    public static SortedDictionary<byte[], byte[]> Expected(int t, Func<int, int> bigValues)
    {
        var model = OrdinalBytes.NewModel();
        for (var i = 1; i <= t; i++)
        {
            foreach (var (key, value) in Writes(i, bigValues(i))) model[key] = value;
        }
        return model;
    }

    /// <summary>A fresh copy of the original to damage.</summary>
    public string Copy(string label)
    {
        var copy = Root.Combine($"{label}-{Guid.NewGuid():N}");
        TempDirectory.CopyDirectory(Original, copy);
        return copy;
    }

    /// <summary>The same entry in a copy.</summary>
    public static string InCopy(string copy, JournalEntryInfo entry) => Path.Combine(JournalInspector.Directory(copy), Path.GetFileName(entry.Path));

    /// <summary>Opens a (damaged) copy and returns the last transaction it shows, after checking its content is exactly that transaction's.</summary>
    public static long OpenAndCheckPrefix(string directory, Func<int, int> bigValues, string context)
    {
        using var env = StorageEnvironment.Open(directory, Options);
        using var tx = env.BeginRead();
        var last = tx.TransactionId;
        var tree = tx.OpenTree(Tree);
        TreeAssert.Equal(Expected((int)last, bigValues), tree, $"{context}: the state after transaction {last}");
        Assert.Equal(last.ToString(System.Globalization.CultureInfo.InvariantCulture), System.Text.Encoding.UTF8.GetString(tree.Get("last"u8)!));
        return last;
    }

    public void Dispose() => Root.Dispose();
}
