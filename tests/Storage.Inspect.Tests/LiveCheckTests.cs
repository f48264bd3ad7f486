using Storage.Paging;
using static Storage.Inspect.Tests.TestEnvironments;

namespace Storage.Inspect.Tests;

/// <summary><see cref="StorageEnvironment.Check"/>: the checker on the newest committed snapshot of an open environment.</summary>
public class LiveCheckTests
{
    /// <summary>Small journal files and a flusher that runs all the time: checks overlap commits, flushes, syncs and recycled files.</summary>
    private static readonly StorageOptions Busy = new()
    {
        MinJournalFileSizeBytes = 64 << 10,
        MaxJournalFileSizeBytes = 256 << 10,
        FlushInterval = TimeSpan.FromMilliseconds(1),
        SyncInterval = TimeSpan.FromMilliseconds(1),
        ScratchBudgetBytes = 1 << 20,
    };

    [Fact]
    public async Task A_check_while_another_thread_commits_continuously_is_consistent_every_time()
    {
        using var dir = new TempDir();
        var flushes = 0;
        using var env = StorageEnvironment.Open(dir.Path, Busy with { OnFlush = _ => Interlocked.Increment(ref flushes) });
        Fill(env, 1000, 5);
        var commits = 0;
        using var stop = new CancellationTokenSource();
        var writer = Task.Run(() =>
        {
            var random = new Random(7);
            while (!stop.IsCancellationRequested)
            {
                using var tx = env.BeginWrite();
                var tree = tx.OpenOrCreateTree(random.Next(3) == 0 ? "blobs" : "users");
                for (var i = 0; i < 40; i++)
                {
                    var k = random.Next(3000);
                    if (random.Next(3) == 0) tree.Delete(Key(k));
                    else tree.Put(Key(k), Value(k, random.Next(12) == 0 ? 3000 + random.Next(9000) : 20 + random.Next(150)));
                }
                // Trees come and go too, so that the tree of tree names changes under the checks.
                if (random.Next(10) == 0 && !tx.DeleteTree("scratch")) tx.CreateTree("scratch").Put(Key(1), Value(1, 10));
                tx.Commit();
                Interlocked.Increment(ref commits);
            }
        }, TestContext.Current.CancellationToken);
        try
        {
            var checks = 0;
            var flushesAtStart = Volatile.Read(ref flushes);
            while (checks < 100 || Volatile.Read(ref commits) < 500)
            {
                var report = env.Check(collectPages: checks % 4 == 0);
                checks++;
                Assert.True(report.IsConsistent, $"check {checks} after {Volatile.Read(ref commits)} commits: {string.Join("\n", report.Problems)}");
                Assert.Equal(report.PagesInUseOrFree, report.ReservedPages + report.ReachablePages + report.FreePages);
                Assert.False(writer.IsFaulted, writer.Exception?.ToString());
            }
            Assert.True(Volatile.Read(ref flushes) > flushesAtStart, "the flusher ran while the checks did");
        }
        finally
        {
            stop.Cancel();
            await writer;
        }
        Assert.True(env.Check().IsConsistent);
    }

    [Fact]
    public async Task The_tools_check_and_journals_on_a_directory_being_written_never_report_a_write_in_flight_as_damage()
    {
        using var dir = new TempDir();
        // Open here, so the directory is locked, as it is for the tool while an application has it open.
        using var env = StorageEnvironment.Open(dir.Path, Busy);
        Fill(env, 1000, 5);
        using var stop = new CancellationTokenSource();
        var writer = Task.Run(() =>
        {
            var random = new Random(3);
            while (!stop.IsCancellationRequested)
            {
                using var tx = env.BeginWrite();
                var tree = tx.OpenOrCreateTree("users");
                for (var i = 0; i < 30; i++) tree.Put(Key(random.Next(3000)), Value(i, 20 + random.Next(300)));
                tx.Commit();
            }
        }, TestContext.Current.CancellationToken);
        try
        {
            for (var i = 0; i < 60; i++)
            {
                var command = i % 2 == 0 ? "check" : "journals";
                var code = Run(out var stdout, out var stderr, command, dir.Path);
                Assert.True(code == 0, $"{command} run {i + 1} exited {code}:\n{stdout}{stderr}");
                Assert.DoesNotContain("strict open fails", stdout, StringComparison.Ordinal);
                Assert.DoesNotContain("NOT consistent", stdout, StringComparison.Ordinal);
                if (command == "check") Assert.Contains("open in another process", stdout, StringComparison.Ordinal);
                Assert.False(writer.IsFaulted, writer.Exception?.ToString());
            }
        }
        finally
        {
            stop.Cancel();
            await writer;
        }
    }

    [Fact]
    public void A_data_file_page_damaged_behind_the_environments_back_is_an_error_naming_that_page()
    {
        using var dir = new TempDir();
        using var env = StorageEnvironment.Open(dir.Path, Quiet);
        Fill(env, 2000, 5);
        env.Checkpoint();
        var before = env.Check(collectPages: true);
        Assert.True(before.IsConsistent, string.Join("\n", before.Problems));
        // The emptiest leaf of "users": the garbage goes between its slots and its nodes, so that only its checksum tells.
        var usersId = before.Trees.Single(t => t.Name == "users").TreeId;
        var leaf = Enumerable.Range(0, before.Pages!.Length).Where(p => before.Pages[p].Kind == PageKind.Leaf && before.Pages[p].TreeId == usersId)
            .MinBy(p => before.Pages[p].UsedBytes);
        Assert.True(before.Pages[leaf].UsedBytes < PageLayout.PageSizeBytes - 64, "the leaf has room between its slots and its nodes");
        using (var read = env.BeginRead())
        {
            unsafe
            {
                Assert.False(env.PageTable.TryGetPage(leaf, read.TransactionId, out _, out _), "after a checkpoint the page is read from the data file");
            }
        }

        using (var file = new FileStream(Path.Combine(dir.Path, DataFile.FileName), FileMode.Open, FileAccess.ReadWrite, FileShare.ReadWrite))
        {
            var header = new byte[PageLayout.HeaderSizeBytes];
            file.Position = (long)leaf * PageLayout.PageSizeBytes;
            file.ReadExactly(header);
            var lower = BitConverter.ToUInt16(header, 10); // the end of the slots
            file.Position = (long)leaf * PageLayout.PageSizeBytes + lower;
            file.Write(Enumerable.Range(0, 64).Select(i => (byte)(i * 37 + 11)).ToArray());
        }

        var report = env.Check();
        Assert.False(report.IsConsistent);
        var problem = Assert.Single(report.Problems, p => p.Severity == ProblemSeverity.Error);
        Assert.Equal("checksum", problem.Kind);
        Assert.Equal(leaf, problem.PageNumber);
        Assert.Equal("users", problem.Tree);
        Assert.Contains($"page {leaf}, tree 'users'", problem.ToString());
    }

    [Fact]
    public void The_reports_counts_match_what_was_written()
    {
        using var dir = new TempDir();
        using var env = StorageEnvironment.Open(dir.Path, Quiet);
        Fill(env, 3000, 12);
        using (var tx = env.BeginWrite())
        {
            var users = tx.OpenTree("users");
            for (var i = 0; i < 3000; i += 3) users.Delete(Key(i));
            tx.CreateTree("empty");
            tx.Commit();
        }

        var report = env.Check(collectPages: true);

        Assert.True(report.IsConsistent, string.Join("\n", report.Problems));
        Assert.Equal(["blobs", "empty", "users"], report.Trees.Skip(1).Select(t => t.Name!));
        Assert.Equal(2000, report.Trees.Single(t => t.Name == "users").Entries);
        Assert.Equal(12, report.Trees.Single(t => t.Name == "blobs").Entries);
        Assert.Equal(0, report.Trees.Single(t => t.Name == "empty").Entries);
        Assert.Equal(3, report.Trees[0].Entries);
        Assert.Equal(env.GetStats().LastTransactionId, report.TransactionId);
        using (var read = env.BeginRead())
        {
            foreach (var name in read.ListTrees())
            {
                var stats = read.OpenTree(name).GetStats();
                var tree = report.Trees.Single(t => t.Name == name);
                Assert.Equal((stats.Entries, stats.Depth, stats.BranchPages, stats.LeafPages, stats.OverflowPages),
                    (tree.Entries, tree.Depth, tree.BranchPages, tree.LeafPages, tree.OverflowPages));
            }
        }
        var pages = report.Pages!;
        Assert.Equal(report.PagesInUseOrFree, pages.Length);
        Assert.Equal(report.ReachablePages, pages.Count(p => p.Kind is PageKind.Branch or PageKind.Leaf or PageKind.Overflow or PageKind.OverflowContinuation));
        Assert.Equal(report.ReachablePages, report.Trees.Sum(t => t.BranchPages + t.LeafPages + t.OverflowPages));
        Assert.Equal(report.FreePages, pages.Count(p => p.Kind == PageKind.Free));
        Assert.Equal(report.ReservedPages, pages.Count(p => p.Kind is PageKind.FileHeader or PageKind.FreeSpaceBitmap or PageKind.Reserved));
        Assert.Equal(0, report.LeakedPages);
        Assert.Equal(report.PagesInUseOrFree, report.ReservedPages + report.ReachablePages + report.FreePages);

        // The same state read offline, from the journal without the lock, gives the same counts.
        var offline = Inspection.EnvironmentSnapshot.Check(dir.Path, collectPages: true);
        Assert.True(offline.IsConsistent, string.Join("\n", offline.Problems));
        Assert.Equal(report.TransactionId, offline.TransactionId);
        Assert.Equal((report.ReservedPages, report.ReachablePages, report.FreePages, report.PagesInUseOrFree),
            (offline.ReservedPages, offline.ReachablePages, offline.FreePages, offline.PagesInUseOrFree));
        Assert.Equal(report.Trees.Select(t => (t.Name, t.Entries, t.LeafPages, t.BranchPages, t.OverflowPages, t.UsedBytes)),
            offline.Trees.Select(t => (t.Name, t.Entries, t.LeafPages, t.BranchPages, t.OverflowPages, t.UsedBytes)));
        Assert.Equal(report.Pages, offline.Pages);
    }

    [Fact]
    public void Progress_is_reported_and_ends_with_every_page()
    {
        using var dir = new TempDir();
        using var env = StorageEnvironment.Open(dir.Path, Quiet);
        using (var tx = env.BeginWrite())
        {
            // More pages than one progress step: six values of 6 MiB.
            var tree = tx.CreateTree("large");
            for (var i = 0; i < 6; i++) tree.Put(Key(i), Value(i, 6 << 20));
            tx.Commit();
        }
        var seen = new List<CheckProgress>();
        var report = env.Check(progress: new Recorder(seen));
        Assert.True(seen.Count >= 2, $"{seen.Count} reports");
        Assert.Equal(new CheckProgress(report.PagesInUseOrFree, report.PagesInUseOrFree), seen[^1]);
        Assert.All(seen, p => Assert.InRange(p.PagesExamined, 1, p.PagesTotal));
    }

    [Fact]
    public void A_closed_environment_cannot_be_checked_live()
    {
        using var dir = new TempDir();
        var env = StorageEnvironment.Open(dir.Path, Quiet);
        env.Dispose();
        var error = Assert.Throws<StorageException>(() => env.Check());
        Assert.Equal(StorageErrorCode.EnvironmentClosed, error.ErrorCode);
    }

    private sealed class Recorder(List<CheckProgress> seen) : IProgress<CheckProgress>
    {
        public void Report(CheckProgress value) => seen.Add(value);
    }
}
