using Storage.Tests.FaultTests;
using Storage.Tests.Support;

namespace Storage.Tests.SpaceTests;

/// <summary>
/// A growing data file is lengthened ahead of need, off the committing thread: reserving blocks is a file system journal
/// commit, which can wait tens of ms behind the data file's writeback, and a commit should not wait for it.
/// </summary>
public sealed class A_growing_data_file
{
    [Fact]
    public void Is_grown_ahead_of_need_so_that_commits_do_not_grow_it_themselves()
    {
        using var temp = new TempDirectory("grow-ahead");
        var faults = new ScriptedFaults();
        var model = OrdinalBytes.NewModel();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small with { FaultInjector = faults });
        // Grown on demand once at least: the file is now growing.
        var next = 0;
        while (env.DataFile.PageCount * Storage.Paging.PageLayout.PageSizeBytes < 4 << 20) next = Commit(env, model, next);
        env.DataFile.WaitForGrowthAhead();
        var before = env.DataFile.PageCount;

        // From now on a growth on this (the committing) thread finds the disk full; growths ahead of need do not.
        faults.FailResizes((path, _) => ScriptedFaults.IsDataFile(path), ScriptedFaults.Enospc, once: false, thisThreadOnly: true);
        for (var i = 0; i < 60; i++)
        {
            next = Commit(env, model, next);
            env.DataFile.WaitForGrowthAhead();
        }

        Assert.Equal(0, faults.Fired);
        Assert.True(env.DataFile.PageCount >= before + 256, $"the file grew from {before} to {env.DataFile.PageCount} pages");
        using var read = env.BeginRead();
        TreeAssert.Equal(model, read.OpenTree("t"), "after the commits");
    }

    /// <summary>Twenty new entries of 2,000 bytes: about five new pages.</summary>
    private static int Commit(StorageEnvironment env, SortedDictionary<byte[], byte[]> model, int start)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("t");
        for (var i = start; i < start + 20; i++)
        {
            var key = TestData.Key($"k{i:D7}");
            var value = TestData.Value(i, 2_000);
            tree.Put(key, value);
            model[key] = value;
        }
        tx.Commit();
        return start + 20;
    }
}
