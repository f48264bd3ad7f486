using Storage.Inspection;
using Storage.Tests.Support;

namespace Storage.Tests.Integrity;

/// <summary>
/// Regression tests for damage that recovery used to make permanent: a diff applied over a damaged data-file page,
/// then written back under a fresh checksum. Every page record now carries the checksum its transaction stamped, and
/// a rebuilt page must match it.
/// </summary>
public sealed class A_damaged_page_that_the_journal_changes
{
    private static readonly StorageOptions Options = TestOptions.JournalOnly;

    /// <summary>
    /// Transactions 1..5 synced into the data file; 6..20 only in the journal, each adding to the same one-leaf tree
    /// (transaction 6 creates a tree and 7 deletes it, so the journal changes the bitmap page too).
    /// </summary>
    private static string Build(TempDirectory temp)
    {
        var dir = temp.Combine("env");
        var env = StorageEnvironment.Open(dir, Options);
        for (var t = 1; t <= 20; t++)
        {
            using (var tx = env.BeginWrite())
            {
                tx.OpenOrCreateTree("t").Put(TestData.Key($"k{t:D2}"), TestData.Value(t, 40));
                if (t == 6) tx.CreateTree("u");
                if (t == 7) tx.DeleteTree("u");
                tx.Commit();
            }
            if (t == 5) env.Checkpoint();
        }
        env.SimulateCrash();
        return dir;
    }

    [Fact]
    public void Fails_the_open_naming_the_page_when_the_damage_is_outside_every_diff_and_writes_nothing()
    {
        using var temp = new TempDirectory("replay");
        var dir = Build(temp);
        var root = EnvironmentSnapshot.Check(dir).Trees.Single(t => t.Name == "t").RootPage;
        // The first key's node sits at the end of the page, and later inserts never move it: no diff covers it.
        DataFileInspector.FlipByte(dir, root * DataFileInspector.PageBytes + DataFileInspector.PageBytes - 10);
        var before = DataFileInspector.Hash(DataFileInspector.PathOf(dir));

        var error = Assert.Throws<StorageCorruptedException>(() => StorageEnvironment.Open(dir, Options));

        Assert.Equal(root, error.PageNumber);
        Assert.Contains("rebuilt from the journal", error.Message, StringComparison.Ordinal);
        Assert.Equal(before, DataFileInspector.Hash(DataFileInspector.PathOf(dir)));
        var report = EnvironmentSnapshot.Check(dir);
        Assert.Contains(report.Problems, p => p.Kind == "replay" && p.PageNumber == root);
        Assert.False(report.IsConsistent);
    }

    [Fact]
    public void Fails_the_open_when_the_free_space_bitmap_the_journal_changes_has_a_flipped_bit()
    {
        using var temp = new TempDirectory("replay");
        var dir = Build(temp);
        // Bitmap page 2, a bit for a page far past the end: no transaction changes that word, every transaction changes the page.
        DataFileInspector.FlipByte(dir, 2 * DataFileInspector.PageBytes + 64 + 3000);

        var error = Assert.Throws<StorageCorruptedException>(() => StorageEnvironment.Open(dir, Options));

        Assert.Equal(2, error.PageNumber);
        var problems = EnvironmentSnapshot.Check(dir).Problems;
        Assert.True(problems.Any(p => p.Kind == "replay" && p.PageNumber == 2), string.Join("; ", problems));
    }

    [Fact]
    public void Opens_with_every_transaction_when_the_damage_is_where_a_diff_rewrites_it()
    {
        using var temp = new TempDirectory("replay");
        var dir = Build(temp);
        // The page header's Lower/Upper change in every transaction: damage there is overwritten by the diffs.
        var root = EnvironmentSnapshot.Check(dir).Trees.Single(t => t.Name == "t").RootPage;
        DataFileInspector.FlipByte(dir, root * DataFileInspector.PageBytes + 12);

        using var env = StorageEnvironment.Open(dir, Options);

        Assert.Equal(20, env.GetStats().LastTransactionId);
        using var tx = env.BeginRead();
        for (var t = 1; t <= 20; t++) Assert.Equal(TestData.Value(t, 40), tx.OpenTree("t").Get(TestData.Key($"k{t:D2}")));
    }
}
