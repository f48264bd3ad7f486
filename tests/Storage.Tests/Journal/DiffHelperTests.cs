using Storage.Tests.Support;

namespace Storage.Tests.JournalTests;

/// <summary>
/// A large transaction's changed pages are diffed on two threads, into one entry: it must hold the same records as the
/// entry one thread makes, and recovery from it must rebuild every page.
/// </summary>
public sealed class A_large_commit_diffed_on_two_threads
{
    /// <summary>Compression off: whether an entry pays to compress is measured per environment, and the three must compare byte for byte.</summary>
    private static readonly StorageOptions Options = TestOptions.JournalOnly with { MaxJournalFileSizeBytes = 16 << 20, CompressionThresholdBytes = 0 };

    [Fact]
    public void Writes_the_same_records_as_one_thread_and_recovers_every_page()
    {
        using var shared = new TempDirectory("diff-helper");
        using var helperAlone = new TempDirectory("diff-helper");
        using var oneThread = new TempDirectory("diff-helper");
        var sharedCommit = Fill(shared.Path, Options, env => { });
        var helperCommit = Fill(helperAlone.Path, Options, env => env.Commits.DiffHelper.HelperTakesAll = true);
        var oneThreadCommit = Fill(oneThread.Path, Options, env => env.Commits.DiffHelper.MinPages = int.MaxValue);

        Assert.True(oneThreadCommit.Stats.LeafPages > 2 * Storage.Commit.DiffHelper.DefaultMinPages, $"{oneThreadCommit.Stats.LeafPages} leaves changed");
        Assert.Equal((1, 0, 0), (sharedCommit.Runs, helperCommit.Runs - 1, oneThreadCommit.Runs));
        Assert.Equal(0, oneThreadCommit.HelperPages);
        // Updates in place split nothing: every page the last commit changed is one the helper diffed.
        Assert.Equal(oneThreadCommit.Stats.LeafPages + oneThreadCommit.Stats.BranchPages, helperCommit.HelperPages);
        foreach (var commit in new[] { sharedCommit, helperCommit })
        {
            Assert.Equal(oneThreadCommit.Stats.LeafPages, commit.Stats.LeafPages);
            Assert.Equal(oneThreadCommit.Stats.BranchPages, commit.Stats.BranchPages);
            Assert.Equal(oneThreadCommit.Stats.UncompressedPayloadBytes, commit.Stats.UncompressedPayloadBytes);
            Assert.Equal(oneThreadCommit.Stats.JournalBytes, commit.Stats.JournalBytes);
        }
        foreach (var path in new[] { shared.Path, helperAlone.Path, oneThread.Path }) AssertRecovered(path, Options);
    }

    /// <summary>
    /// The entry is compressed after the helper's records were added to it: recovery must find them inside the
    /// compressed payload. The helper diffs every page, so none of the last commit's records are the committer's own.
    /// </summary>
    [Fact]
    public void Compresses_the_helpers_records_with_the_rest_and_recovers_every_page()
    {
        using var temp = new TempDirectory("diff-helper");
        var options = Options with { CompressionThresholdBytes = 4096 };
        var commit = Fill(temp.Path, options, env =>
        {
            env.Commits.DiffHelper.HelperTakesAll = true;
            env.Commits.Compression.CompressWhenLarge = true;
        });

        Assert.True(commit.Stats.Compressed, "the last commit's entry was not compressed");
        Assert.True(commit.Stats.JournalBytes < commit.Stats.UncompressedPayloadBytes,
            $"{commit.Stats.JournalBytes} bytes in the journal for {commit.Stats.UncompressedPayloadBytes} of payload");
        Assert.Equal(1, commit.Runs);
        Assert.Equal(commit.Stats.LeafPages + commit.Stats.BranchPages, commit.HelperPages);
        AssertRecovered(temp.Path, options);
    }

    private static void AssertRecovered(string path, StorageOptions options)
    {
        using var env = StorageEnvironment.Open(path, options);
        using var tx = env.BeginRead();
        var tree = tx.OpenTree("t");
        Assert.Equal(Keys, tree.Count);
        for (var i = 0; i < Keys; i++) Assert.Equal(Value(i, updated: i % Stride == 0), tree.Get(TestData.Key($"k{i:D6}")));
    }

    private const int Keys = 60_000;
    private const int Stride = 40;

    private static byte[] Value(int i, bool updated) => TestData.Value(updated ? -i - 1 : i, 100);

    /// <summary>Fills a tree, then changes one key in every few leaves in one transaction, then stops as a crash would.</summary>
    private static (CommitStats Stats, long Runs, long HelperPages) Fill(string directory, StorageOptions options, Action<StorageEnvironment> setUp)
    {
        var env = StorageEnvironment.Open(directory, options);
        setUp(env);
        for (var start = 0; start < Keys; start += 5_000)
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenOrCreateTree("t");
            for (var i = start; i < start + 5_000; i++) tree.Put(TestData.Key($"k{i:D6}"), Value(i, updated: false));
            tx.Commit();
        }
        var runsBefore = env.Commits.DiffHelper.Runs;
        var helperPagesBefore = env.Commits.DiffHelper.HelperPages;
        CommitStats stats;
        using (var tx = env.BeginWrite())
        {
            var tree = tx.OpenTree("t");
            for (var i = 0; i < Keys; i += Stride) tree.Put(TestData.Key($"k{i:D6}"), Value(i, updated: true));
            stats = tx.Commit();
        }
        var result = (stats, env.Commits.DiffHelper.Runs - runsBefore, env.Commits.DiffHelper.HelperPages - helperPagesBefore);
        env.SimulateCrash();
        return result;
    }
}
