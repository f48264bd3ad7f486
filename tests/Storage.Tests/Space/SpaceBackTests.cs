using Storage.Inspection;
using Storage.Tests.FaultTests;
using Storage.Tests.Support;

namespace Storage.Tests.SpaceTests;

/// <summary>
/// Free space goes back to the file system: runs of free pages are punched out of the data file, its free end is cut
/// off, and compaction moves pages down so that the end comes free, while readers keep their snapshots.
/// </summary>
public sealed class Space_given_back
{
    private const string Tree = "t";

    [Fact]
    public void Deleting_everything_and_compacting_leaves_a_tenth_of_the_peak_on_disk()
    {
        using var temp = new TempDirectory("space-all");
        var dataFile = Path.Combine(temp.Path, "data.storage");
        long peakLength, peakAllocated;
        CompactionResult result;
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly))
        {
            Fill(env, 0, 80_000, valueSize: 200);
            env.Checkpoint();
            peakLength = new FileInfo(dataFile).Length;
            peakAllocated = Disk.AllocatedBytes(dataFile);
            Assert.True(peakLength > 8 << 20, $"the file grew to {peakLength:N0} bytes");
            DeleteRange(env, 0, 80_000);
            result = env.Compact(cancellationToken: TestContext.Current.CancellationToken);
        }
        var length = new FileInfo(dataFile).Length;
        Assert.True(length <= peakLength / 10, $"{length:N0} bytes long after compacting, {peakLength:N0} at the peak ({result})");
        if (Disk.CanMeasure)
        {
            var allocated = Disk.AllocatedBytes(dataFile);
            Assert.True(allocated <= peakAllocated / 10, $"{allocated:N0} bytes on disk after compacting, {peakAllocated:N0} at the peak");
        }
        Assert.Empty(EnvironmentSnapshot.Check(temp.Path).Problems);
        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using var read = reopened.BeginRead();
        Assert.Equal(0, read.OpenTree(Tree).Count);
    }

    [Fact]
    public void Compaction_moves_pages_under_a_reader_that_keeps_its_snapshot()
    {
        using var temp = new TempDirectory("space-compact");
        var model = OrdinalBytes.NewModel();
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            Fill(env, 0, 30_000, valueSize: 150, model);
            // Large values too, so that overflow runs move as well.
            using (var tx = env.BeginWrite())
            {
                var tree = tx.OpenTree(Tree);
                for (var i = 0; i < 40; i++)
                {
                    var key = TestData.Key($"big{i:D3}");
                    var value = TestData.Value(i, 20_000 + i * 100);
                    tree.Put(key, value);
                    model[key] = value;
                }
                tx.Commit();
            }
            // Delete all but every fifth key, the front of the key space entirely.
            using (var tx = env.BeginWrite())
            {
                var tree = tx.OpenTree(Tree);
                for (var i = 0; i < 30_000; i++)
                {
                    if (i % 5 == 0 && i >= 10_000) continue;
                    var key = TestData.Key($"k{i:D7}");
                    Assert.True(tree.Delete(key));
                    model.Remove(key);
                }
                tx.Commit();
            }
            var before = OrdinalBytes.Copy(model);
            using var reader = env.BeginRead();
            var progress = new List<CompactionProgress>();
            var result = env.Compact(new SynchronousProgress<CompactionProgress>(progress.Add), TestContext.Current.CancellationToken);
            Assert.True(result.PagesMoved > 0, $"pages moved: {result}");
            Assert.NotEmpty(progress);
            Assert.Equal(result.PagesMoved, progress[^1].PagesMoved);
            // The reader began before compaction: it sees its snapshot, page for page.
            TreeAssert.Equal(before, reader.OpenTree(Tree), "the reader held across compaction");
            using (var read = env.BeginRead()) TreeAssert.Equal(model, read.OpenTree(Tree), "after compaction");
            reader.Dispose();
            // Writes go on after compaction, into the holes and at the end.
            Fill(env, 100_000, 2_000, valueSize: 150, model);
            var second = env.Compact(cancellationToken: TestContext.Current.CancellationToken);
            Assert.True(second.FileBytesAfter <= second.FileBytesBefore, second.ToString());
        }
        Assert.Empty(EnvironmentSnapshot.Check(temp.Path).Problems);
        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using var check = reopened.BeginRead();
        TreeAssert.Equal(model, check.OpenTree(Tree), "after reopening");
    }

    [FactNeeding(Need.Linux, "Measuring blocks on disk with du")]
    public void Free_runs_inside_the_file_are_punched_out_and_reused_after_a_crash()
    {
        using var temp = new TempDirectory("space-punch");
        var dataFile = Path.Combine(temp.Path, "data.storage");
        var model = OrdinalBytes.NewModel();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        try
        {
            Fill(env, 0, 40_000, valueSize: 200, model);
            env.Checkpoint();
            var length = new FileInfo(dataFile).Length;
            var allocated = Disk.AllocatedBytes(dataFile);
            // The middle of the key space goes: whole leaves free up inside the file, not at its end.
            DeleteRange(env, 10_000, 30_000, model);
            env.Checkpoint();
            var afterDelete = Disk.AllocatedBytes(dataFile);
            Assert.Equal(length, new FileInfo(dataFile).Length);
            Assert.True(afterDelete < allocated - (allocated / 4), $"{afterDelete:N0} bytes on disk after deleting half, {allocated:N0} before");
            Assert.True(env.GetStats().Space.GivenBackBytes > 0);
            // The checker, on the live directory: the holes hold only free pages.
            var live = EnvironmentSnapshot.Check(temp.Path);
            Assert.Empty(live.Problems);
            Assert.True(live.HoleBytes >= env.GetStats().Space.GivenBackBytes / 2, $"{live.HoleBytes:N0} bytes in holes");

            // The punched pages are taken again (their blocks reserved anew), across a crash that loses the data file's
            // unsynced state, and all reads back.
            Fill(env, 200_000, 10_000, valueSize: 200, model);
            env.SimulateCrash();
            env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
            Fill(env, 300_000, 5_000, valueSize: 200, model);
            using (var read = env.BeginRead()) TreeAssert.Equal(model, read.OpenTree(Tree), "after reusing the punched pages");
            env.Dispose();
            Assert.Empty(EnvironmentSnapshot.Check(temp.Path).Problems);
            env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
            using (var read = env.BeginRead()) TreeAssert.Equal(model, read.OpenTree(Tree), "after reopening");
        }
        finally
        {
            env.Dispose();
        }
    }

    /// <summary>
    /// Pages past the last one in use when the environment opens may have been punched out (freed at the end and not cut
    /// off, as a crash or a cut to whole mebibytes leaves them): the open reserves their blocks again, so that a full disk
    /// fails a commit that takes them, not the flusher's write of them later.
    /// </summary>
    [FactNeeding(Need.Linux, "Measuring blocks on disk with du")]
    public void Pages_punched_out_past_the_last_in_use_get_their_blocks_back_at_open()
    {
        using var temp = new TempDirectory("space-tail");
        var dataFile = Path.Combine(temp.Path, "data.storage");
        var model = OrdinalBytes.NewModel();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        try
        {
            Fill(env, 0, 2_000, valueSize: 100, model);
            env.Checkpoint();
            PutValue(env, "big1", 3 << 20);
            PutValue(env, "big2", 200 << 10);
            env.Checkpoint();
            // The large value's pages are punched out inside the file; then the one after them goes, and with it the end of
            // the pages in use moves back before them.
            DeleteValue(env, "big1");
            env.Checkpoint();
            DeleteValue(env, "big2");
            env.Checkpoint();
            var next = env.CurrentState.NextPageNumber;
            var length = new FileInfo(dataFile).Length;
            var allocated = Disk.AllocatedBytes(dataFile);
            Assert.True(length - allocated >= 3 << 20, $"{allocated:N0} of {length:N0} bytes have blocks: the large value's were not given back");
            env.SimulateCrash();

            env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
            Assert.Equal(next, env.CurrentState.NextPageNumber);
            // Every page from the last in use to the file's end has its blocks (only pages below it may be holes).
            var reserved = Disk.AllocatedBytes(dataFile);
            var reopenedLength = new FileInfo(dataFile).Length;
            Assert.True(reserved >= reopenedLength - next * 8192, $"{reserved:N0} of {reopenedLength:N0} bytes have blocks after the open; {next} pages in use");
            Fill(env, 100_000, 5_000, valueSize: 200, model);
            using (var read = env.BeginRead()) TreeAssert.Equal(model, read.OpenTree(Tree), "after taking the pages past the end");
        }
        finally
        {
            env.Dispose();
        }

        static void PutValue(StorageEnvironment env, string key, int size)
        {
            using var tx = env.BeginWrite();
            tx.OpenTree(Tree).Put(TestData.Key(key), new byte[size]);
            tx.Commit();
        }

        static void DeleteValue(StorageEnvironment env, string key)
        {
            using var tx = env.BeginWrite();
            Assert.True(tx.OpenTree(Tree).Delete(TestData.Key(key)));
            tx.Commit();
        }
    }

    /// <summary>
    /// A commit gives the end of the file back (its pages freed there) and then fails (too large): the newest state is still
    /// the one before it, and a cut after the next sync keeps every page that state uses.
    /// </summary>
    [Fact]
    public void A_commit_that_gave_the_end_back_and_failed_leaves_the_file_long_enough_for_the_newest_state()
    {
        using var temp = new TempDirectory("space-cut");
        var dataFile = Path.Combine(temp.Path, "data.storage");
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly.WithMaxTransactionPayload(64 << 10));
        Fill(env, 0, 200, valueSize: 100);
        env.Checkpoint();
        using (env.BeginRead())
        {
            // Held by the reader, the flusher stays at the synced state while the file grows.
            for (var i = 0; i < 600; i++)
            {
                using var tx = env.BeginWrite();
                tx.OpenTree(Tree).Put(TestData.Key($"big{i:D4}"), TestData.Value(i + 1, 40 << 10));
                tx.Commit();
            }
            var error = Assert.Throws<StorageException>(() =>
            {
                using var tx = env.BeginWrite();
                var tree = tx.OpenTree(Tree);
                for (var i = 0; i < 600; i++) tree.Delete(TestData.Key($"big{i:D4}"));
                for (var i = 0; i < 400; i++) tree.Put(TestData.Key($"x{i:D4}"), TestData.Value(i + 1, 500));
                tx.Commit();
            });
            Assert.Equal(StorageErrorCode.TransactionTooLarge, error.ErrorCode);
            env.Checkpoint();
            Assert.True(new FileInfo(dataFile).Length / 8192 >= env.WriterState.NextPageNumber,
                $"the file has {new FileInfo(dataFile).Length / 8192} pages; the newest state uses {env.WriterState.NextPageNumber}");
        }
        env.Checkpoint();
        Assert.True(new FileInfo(dataFile).Length / 8192 >= env.WriterState.NextPageNumber);
    }

    /// <summary>The free end is cut at the next sync while a write transaction is open (a writer that never pauses).</summary>
    [Fact]
    public void The_free_end_is_cut_while_a_write_transaction_is_open()
    {
        using var temp = new TempDirectory("space-cut-busy");
        var dataFile = Path.Combine(temp.Path, "data.storage");
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        Fill(env, 0, 1_000, valueSize: 100);
        using (var tx = env.BeginWrite())
        {
            tx.OpenTree(Tree).Put(TestData.Key("big"), new byte[64 << 20]);
            tx.Commit();
        }
        env.Checkpoint();
        var peak = new FileInfo(dataFile).Length;
        using (var tx = env.BeginWrite())
        {
            Assert.True(tx.OpenTree(Tree).Delete(TestData.Key("big")));
            tx.Commit();
        }

        using (var open = env.BeginWrite())
        {
            open.OpenTree(Tree).Put(TestData.Key("pending"), TestData.Value(1, 100));
            env.Checkpoint();
            Assert.True(new FileInfo(dataFile).Length < peak / 2, $"{new FileInfo(dataFile).Length:N0} bytes after the sync, {peak:N0} before");
            open.Commit();
        }
    }

    [FactNeeding(Need.Linux, "Finding holes with SEEK_HOLE")]
    public void The_checker_reports_a_page_in_use_whose_blocks_were_given_back()
    {
        using var temp = new TempDirectory("space-hole-check");
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small)) Fill(env, 0, 5_000, valueSize: 100);
        var before = EnvironmentSnapshot.Check(temp.Path, collectPages: true);
        Assert.Empty(before.Problems);
        var leaf = Array.FindIndex(before.Pages!, info => info.Kind == PageKind.Leaf);
        Assert.True(leaf > 0);
        using (var handle = File.OpenHandle(Path.Combine(temp.Path, "data.storage"), FileMode.Open, FileAccess.ReadWrite))
        {
            Assert.Equal(0, Storage.Platform.Posix.FAllocate(handle.DangerousGetHandle(), Storage.Platform.Posix.FallocatePunchHole, (long)leaf * 8192, 8192));
        }
        var after = EnvironmentSnapshot.Check(temp.Path);
        Assert.Contains(after.Problems, p => p.Kind == "hole" && p.PageNumber == leaf);
    }

    /// <summary>
    /// Pages punched out have no blocks: a commit that takes them again on a full disk fails, cleanly, and succeeds once
    /// space returns; nothing acknowledged is lost (a small tmpfs, root on Linux only).
    /// </summary>
    [FactNeeding(Need.SmallFileSystem, "A real full file system")]
    public void Reusing_punched_pages_on_a_full_disk_fails_the_commit_and_nothing_else()
    {
        using var temp = new TempDirectory("space-full");
        using var mount = new SmallFileSystem(temp.Combine("mnt"), sizeBytes: 24 << 20);
        var directory = Path.Combine(mount.Path, "env");
        var model = OrdinalBytes.NewModel();
        var env = StorageEnvironment.Open(directory, TestOptions.JournalOnly);
        try
        {
            Fill(env, 0, 20_000, valueSize: 200, model);
            env.Checkpoint();
            DeleteRange(env, 2_000, 18_000, model);
            env.Checkpoint();
            Assert.True(env.GetStats().Space.GivenBackBytes > 0, "the deleted range was punched out");
            // Fill the file system to the last block: the holes in the data file are all the room there is.
            var ballast = Path.Combine(mount.Path, "ballast");
            using (var file = new FileStream(ballast, FileMode.Create))
            {
                var chunk = new byte[64 << 10];
                try
                {
                    while (true) file.Write(chunk);
                }
                catch (IOException)
                {
                }
            }
            StorageFullException? full = null;
            var next = 100_000;
            for (var attempt = 0; full is null && attempt < 200; attempt++, next += 200)
            {
                full = Record.Exception(() => Fill(env, next, 200, valueSize: 200, model)) as StorageFullException;
            }
            Assert.NotNull(full);
            // The commit that takes punched pages fails reserving their blocks, not a flush later.
            Assert.EndsWith("data.storage", full!.Path);
            Assert.Equal(0, env.GetStats().Flush.DeferredForSpace);
            using (var read = env.BeginRead()) TreeAssert.Equal(model, read.OpenTree(Tree), "once the disk is full");
            File.Delete(ballast);
            Fill(env, next, 200, valueSize: 200, model);
            env.Checkpoint();
            Assert.Equal(0, env.GetStats().Flush.DeferredForSpace);
            env.Dispose();
            env = StorageEnvironment.Open(directory, TestOptions.Small);
            using var tx = env.BeginRead();
            TreeAssert.Equal(model, tx.OpenTree(Tree), "after space returned and the environment was reopened");
        }
        finally
        {
            env.Dispose();
        }
    }

    private static void Fill(StorageEnvironment env, int first, int count, int valueSize, SortedDictionary<byte[], byte[]>? model = null)
    {
        for (var start = first; start < first + count; start += 1_000)
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenOrCreateTree(Tree);
            var pending = new List<(byte[], byte[])>();
            for (var i = start; i < Math.Min(start + 1_000, first + count); i++)
            {
                var key = TestData.Key($"k{i:D7}");
                var value = TestData.Value(i, valueSize);
                tree.Put(key, value);
                pending.Add((key, value));
            }
            tx.Commit();
            if (model is not null)
            {
                foreach (var (key, value) in pending) model[key] = value;
            }
        }
    }

    private static void DeleteRange(StorageEnvironment env, int first, int end, SortedDictionary<byte[], byte[]>? model = null)
    {
        for (var start = first; start < end; start += 2_000)
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenTree(Tree);
            for (var i = start; i < Math.Min(start + 2_000, end); i++)
            {
                var key = TestData.Key($"k{i:D7}");
                Assert.True(tree.Delete(key));
                model?.Remove(key);
            }
            tx.Commit();
        }
    }

    /// <summary>Reports on the calling thread, at once (<see cref="Progress{T}"/> posts to the thread pool).</summary>
    private sealed class SynchronousProgress<T>(Action<T> report) : IProgress<T>
    {
        public void Report(T value) => report(value);
    }
}

/// <summary>Blocks a file takes on disk, as du counts them (Linux; elsewhere not measured).</summary>
internal static class Disk
{
    public static bool CanMeasure => OperatingSystem.IsLinux();

    public static long AllocatedBytes(string path)
    {
        using var process = System.Diagnostics.Process.Start(new System.Diagnostics.ProcessStartInfo("du", $"-B1 \"{path}\"")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
        })!;
        var output = process.StandardOutput.ReadToEnd();
        process.WaitForExit();
        if (process.ExitCode != 0) throw new InvalidOperationException($"du failed: {process.StandardError.ReadToEnd()}");
        return long.Parse(output.Split('\t')[0], System.Globalization.CultureInfo.InvariantCulture);
    }
}
