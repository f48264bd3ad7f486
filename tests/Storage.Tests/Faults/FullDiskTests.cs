using Storage.Tests.Support;

namespace Storage.Tests.FaultTests;

/// <summary>
/// A full disk fails the commit that needs the space, or leaves a flush for later, and loses nothing: the environment
/// stays usable, and commits succeed again once there is space.
/// </summary>
public sealed class A_full_disk_met_by_the_data_file
{
    [Fact]
    public void Fails_the_commit_whose_pages_need_the_data_file_to_grow_and_nothing_else()
    {
        using var temp = new TempDirectory("full-grow");
        var faults = new ScriptedFaults();
        var model = OrdinalBytes.NewModel();
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small.WithFaults(faults)))
        {
            Commit(env, model, 0, 20);
            // Every growth of the data file from now on finds the disk full, on any thread (the file is also grown ahead
            // of need in the background).
            faults.FailResizes((path, _) => ScriptedFaults.IsDataFile(path), ScriptedFaults.Enospc, once: false, thisThreadOnly: false);
            StorageFullException? full = null;
            var next = 20;
            for (var attempt = 0; full is null && attempt < 200; attempt++, next += 20)
            {
                full = Record.Exception(() => Commit(env, model, next, 20)) as StorageFullException;
            }
            Assert.NotNull(full);
            Assert.Equal(StorageErrorCode.DiskFull, full!.ErrorCode);
            Assert.EndsWith("data.storage", full.Path);

            // Usable: what was acknowledged reads back, and once there is space the same commit succeeds.
            using (var read = env.BeginRead()) TreeAssert.Equal(model, read.OpenTree("t"), "after the failed commit");
            faults.Clear();
            Commit(env, model, next, 20);
            env.Checkpoint();
            Assert.Equal(0, env.GetStats().Flush.DeferredForSpace);
        }
        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using var tx = reopened.BeginRead();
        TreeAssert.Equal(model, tx.OpenTree("t"), "after reopening");
    }

    [Fact]
    public void Leaves_a_flush_that_cannot_write_pages_for_later_and_keeps_every_commit()
    {
        using var temp = new TempDirectory("full-flush");
        var faults = new ScriptedFaults();
        var model = OrdinalBytes.NewModel();
        var options = TestOptions.JournalOnly.WithFaults(faults);
        var env = StorageEnvironment.Open(temp.Path, options);
        Commit(env, model, 0, 200);
        faults.FailWrites((path, _, _) => ScriptedFaults.IsDataFile(path), ScriptedFaults.Enospc, once: false, thisThreadOnly: false);

        var full = Assert.Throws<StorageFullException>(env.Checkpoint);
        Assert.Equal(StorageErrorCode.DiskFull, full.ErrorCode);
        Assert.Equal(1, env.GetStats().Flush.DeferredForSpace);
        // Not poisoned: commits go on, and reads see every commit, the ones the flush could not write included.
        Commit(env, model, 200, 100);
        using (var read = env.BeginRead()) TreeAssert.Equal(model, read.OpenTree("t"), "while the flush waits for space");

        // A crash now: the journal holds everything the data file does not.
        env.SimulateCrash();
        faults.Clear();
        env = StorageEnvironment.Open(temp.Path, options);
        using (var read = env.BeginRead()) TreeAssert.Equal(model, read.OpenTree("t"), "after a crash with the flush left undone");

        // And without a crash: the flush is taken up again once there is space.
        faults.FailWrites((path, _, _) => ScriptedFaults.IsDataFile(path), ScriptedFaults.Enospc, once: false, thisThreadOnly: false);
        Commit(env, model, 300, 100);
        Assert.Throws<StorageFullException>(env.Checkpoint);
        faults.Clear();
        Commit(env, model, 400, 10);
        env.Checkpoint();
        var stats = env.GetStats();
        Assert.Equal(1, stats.Flush.DeferredForSpace);
        Assert.Equal(stats.LastTransactionId, stats.LastSyncedTransactionId);
        env.Dispose();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using var tx = reopened.BeginRead();
        TreeAssert.Equal(model, tx.OpenTree("t"), "after reopening");
    }

    /// <summary>
    /// A real full file system: a small tmpfs mounted for the test (root on Linux only; elsewhere the test is
    /// reported skipped). Commits run until the disk refuses one; then a ballast file is deleted and commits go on.
    /// </summary>
    [FactNeeding(Need.SmallFileSystem, "A real full file system")]
    public void On_a_real_file_system_fails_commits_cleanly_until_space_returns()
    {
        using var temp = new TempDirectory("full-tmpfs");
        // The five commits after the ballast goes need about 3.3 MB (50 values of 3,000 bytes each take an overflow
        // page, and the journal cannot retire files until a flush gets through): the ballast leaves twice that.
        using var mount = new SmallFileSystem(temp.Combine("mnt"), sizeBytes: 16 << 20);
        var ballast = Path.Combine(mount.Path, "ballast");
        File.WriteAllBytes(ballast, new byte[7 << 20]);
        var directory = Path.Combine(mount.Path, "env");
        var model = OrdinalBytes.NewModel();
        var env = StorageEnvironment.Open(directory, TestOptions.Small);
        try
        {
            StorageFullException? full = null;
            var next = 0;
            for (var attempt = 0; full is null && attempt < 2_000; attempt++, next += 50)
            {
                full = Record.Exception(() => Commit(env, model, next, 50)) as StorageFullException;
            }
            Assert.NotNull(full);
            Assert.False(env.GetStats().LastDurableTransactionId == 0, "some commits succeeded before the disk was full");
            using (var read = env.BeginRead()) TreeAssert.Equal(model, read.OpenTree("t"), "once the disk is full");

            File.Delete(ballast);
            for (var i = 0; i < 5; i++, next += 50)
            {
                try
                {
                    Commit(env, model, next, 50);
                }
                catch (StorageFullException e)
                {
                    throw new Xunit.Sdk.XunitException($"commit {i} after space returned: {e.Message}; {Listing(mount.Path)}");
                }
            }
            env.Dispose();
            env = StorageEnvironment.Open(directory, TestOptions.Small);
            using var tx = env.BeginRead();
            TreeAssert.Equal(model, tx.OpenTree("t"), "after space returned and the environment was reopened");
        }
        finally
        {
            env.Dispose();
        }
    }

    private static string Listing(string root) =>
        string.Join(", ", Directory.EnumerateFiles(root, "*", SearchOption.AllDirectories)
            .Select(f => $"{Path.GetRelativePath(root, f)} {new FileInfo(f).Length:N0}")) + $"; free {new DriveInfo(root).AvailableFreeSpace:N0}";

    private static void Commit(StorageEnvironment env, SortedDictionary<byte[], byte[]> model, int first, int count)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("t");
        var pending = new List<(byte[] Key, byte[] Value)>();
        for (var i = first; i < first + count; i++)
        {
            var key = TestData.Key($"k{i:D6}");
            var value = TestData.Value(i, 3_000);
            tree.Put(key, value);
            pending.Add((key, value));
        }
        tx.Commit();
        foreach (var (key, value) in pending) model[key] = value;
    }
}

/// <summary>A tmpfs of a given size mounted on a fresh directory, unmounted on dispose (needs root on Linux).</summary>
internal sealed class SmallFileSystem : IDisposable
{
    public SmallFileSystem(string path, long sizeBytes)
    {
        Path = path;
        Directory.CreateDirectory(path);
        Run("mount", $"-t tmpfs -o size={sizeBytes} storage-test-tmpfs {path}");
    }

    public string Path { get; }

    public void Dispose()
    {
        Run("umount", Path);
        Directory.Delete(Path);
    }

    private static void Run(string command, string arguments)
    {
        using var process = System.Diagnostics.Process.Start(new System.Diagnostics.ProcessStartInfo(command, arguments)
        {
            RedirectStandardError = true,
            RedirectStandardOutput = true,
        })!;
        var error = process.StandardError.ReadToEnd();
        process.WaitForExit();
        if (process.ExitCode != 0) throw new InvalidOperationException($"{command} {arguments} failed ({process.ExitCode}): {error}");
    }
}
