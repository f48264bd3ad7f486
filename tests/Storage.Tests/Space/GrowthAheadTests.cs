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
        using var env = OpenGrowing(temp.Path, TestOptions.Small, faults, model, out var next);
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

    [Fact]
    public async Task Leaves_commits_room_while_a_growth_ahead_waits_behind_the_disk()
    {
        using var temp = new TempDirectory("grow-ahead-held");
        var faults = new ScriptedFaults();
        var model = OrdinalBytes.NewModel();
        // No flushes meanwhile: a flush cuts the file under the same lock that the held growth keeps.
        using var env = OpenGrowing(temp.Path, TestOptions.JournalOnly, faults, model, out var next);

        // The next growth ahead of need waits (as a reservation can, tens of ms behind the data file's writeback) while 60
        // more commits take about 2.4 MB of new pages: they must find that room already there, not wait for the growth.
        var committing = Task.Run(() =>
        {
            // Armed on the committing thread: growths on any other thread are held, and one this thread makes fails.
            faults.HoldResizes(ScriptedFaults.IsDataFile);
            faults.FailResizes((path, _) => ScriptedFaults.IsDataFile(path), ScriptedFaults.Enospc, once: false, thisThreadOnly: true);
            // Until a growth ahead of need is asked for (the room left is then still the margin), then no further until
            // the thread pool has run it into the held reservation: a busy pool may take its time.
            for (var i = 0; i < 2_000 && !env.DataFile.GrowingAhead; i++) next = Commit(env, model, next);
            Assert.True(env.DataFile.GrowingAhead, "a growth ahead of need started");
            Assert.True(faults.WaitForHeldResize(TimeSpan.FromSeconds(30)), "the growth ahead reached its reservation");
            for (var i = 0; i < 60; i++) next = Commit(env, model, next);
        }, TestContext.Current.CancellationToken);
        try
        {
            var finished = await Task.WhenAny(committing, Task.Delay(TimeSpan.FromSeconds(30), TestContext.Current.CancellationToken)) == committing;
            Assert.True(finished, $"the commits waited for the growth held behind the disk ({faults.HeldResizes} held)");
        }
        finally
        {
            faults.ReleaseResizes();
        }
        await committing;
        Assert.Equal(0, faults.Fired);
        env.DataFile.WaitForGrowthAhead();
        using var read = env.BeginRead();
        TreeAssert.Equal(model, read.OpenTree("t"), "after the commits");
    }

    [Fact]
    public void Is_cut_back_at_a_clean_close_even_when_a_growth_ahead_would_start_only_then()
    {
        using var temp = new TempDirectory("grow-ahead-close");
        var faults = new ScriptedFaults();
        var model = OrdinalBytes.NewModel();
        long lengthBeforeClose;
        // Outlives the environment: the close is where it is waited for.
        using var waitedFor = new ManualResetEventSlim(false);
        var growthWentOn = false;
        using (var env = OpenGrowing(temp.Path, TestOptions.JournalOnly, faults, model, out var next))
        {
            // The next growth ahead of need starts its work only once someone waits for it (a busy thread pool can run a
            // queued item that late): at the close, which must not end with the file longer than its pages need.
            env.DataFile.BeforeGrowingAhead = () => growthWentOn = waitedFor.Wait(Within.Default);
            env.DataFile.WaitingForGrowthAhead = waitedFor.Set;
            for (var i = 0; i < 2_000 && !env.DataFile.GrowingAhead; i++) next = Commit(env, model, next);
            Assert.True(env.DataFile.GrowingAhead, "a growth ahead of need started");
            // Then commits until less than a MiB is left past the last page: the close's cut then has nothing to take, and
            // a growth after it would stay.
            while (RoomBytes(env) >= 1 << 20) next = Commit(env, model, next);
            Assert.True(RoomBytes(env) > 0, "room is left past the last page");
            lengthBeforeClose = env.DataFile.PageCount * Storage.Paging.PageLayout.PageSizeBytes;
        }

        Assert.True(growthWentOn, "the growth ahead went on once the close waited for it");
        Assert.Equal(lengthBeforeClose, new FileInfo(Path.Combine(temp.Path, "data.storage")).Length);
        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        using var read = reopened.BeginRead();
        TreeAssert.Equal(model, read.OpenTree("t"), "after the close");
    }

    private static long RoomBytes(StorageEnvironment env) =>
        (env.DataFile.PageCount - env.WriterState.NextPageNumber) * Storage.Paging.PageLayout.PageSizeBytes;

    /// <summary>An environment whose data file grew on demand past 4 MiB (so it is growing), with no growth ahead under way.</summary>
    private static StorageEnvironment OpenGrowing(string path, StorageOptions options, ScriptedFaults faults, SortedDictionary<byte[], byte[]> model, out int next)
    {
        var env = StorageEnvironment.Open(path, options.WithFaults(faults));
        next = 0;
        while (env.DataFile.PageCount * Storage.Paging.PageLayout.PageSizeBytes < 4 << 20) next = Commit(env, model, next);
        env.DataFile.WaitForGrowthAhead();
        return env;
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
