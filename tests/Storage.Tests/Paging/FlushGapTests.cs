using Storage.Inspection;
using Storage.Tests.Support;

namespace Storage.Tests.PagingTests;

/// <summary>
/// The flush's seek cost model: short gaps of clean pages between pages being flushed are written back unchanged, so the
/// flush makes fewer writes, and the file holds exactly what it held plus the flushed pages.
/// </summary>
public sealed class Gaps_between_flushed_pages
{
    [Fact]
    public void Are_filled_with_the_clean_pages_so_runs_merge_and_nothing_changes()
    {
        var (runsWithout, gapsWithout) = FlushScattered(gapFillBytes: 0, out var modelWithout);
        var (runsWith, gapsWith) = FlushScattered(gapFillBytes: 64 << 10, out var modelWith);
        Assert.Equal(0, gapsWithout);
        Assert.True(gapsWith > 0, "clean pages filled gaps");
        Assert.True(runsWith * 2 < runsWithout, $"{runsWith} writes with gaps filled, {runsWithout} without");
        Assert.Equal(modelWithout.Count, modelWith.Count);
    }

    /// <summary>Fills a tree, flushes it, then changes one entry in every few leaves and flushes again; returns that flush's writes and gap pages.</summary>
    private static (long Runs, long GapPages) FlushScattered(long gapFillBytes, out SortedDictionary<byte[], byte[]> model)
    {
        using var temp = new TempDirectory("flush-gaps");
        model = OrdinalBytes.NewModel();
        long runs = 0, gaps = 0;
        var counting = false;
        var options = TestOptions.JournalOnly with
        {
            FlushGapFillBytes = gapFillBytes,
            OnFlush = flush =>
            {
                if (!counting) return;
                runs += flush.Runs;
                gaps += flush.GapPagesWritten;
            },
        };
        using (var env = StorageEnvironment.Open(temp.Path, options))
        {
            Put(env, model, Enumerable.Range(0, 20_000), generation: 0);
            env.Checkpoint();
            counting = true;
            // About one entry in every third leaf (60 entries of 100 bytes to a leaf): gaps of two clean leaves.
            Put(env, model, Enumerable.Range(0, 20_000).Where(i => i % 180 == 0), generation: 1);
            env.Checkpoint();
            counting = false;
        }
        Assert.Empty(EnvironmentSnapshot.Check(temp.Path).Problems);
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            using var read = env.BeginRead();
            TreeAssert.Equal(model, read.OpenTree("t"), $"after a flush with gaps up to {gapFillBytes} bytes filled");
        }
        return (runs, gaps);
    }

    private static void Put(StorageEnvironment env, SortedDictionary<byte[], byte[]> model, IEnumerable<int> keys, int generation)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("t");
        foreach (var i in keys)
        {
            var key = TestData.Key($"k{i:D7}");
            var value = TestData.Value(i * 7 + generation, 100);
            tree.Put(key, value);
            model[key] = value;
        }
        tx.Commit();
    }
}
