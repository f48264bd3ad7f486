using System.IO.Pipelines;
using System.Text;
using Storage.Tests.Support;

namespace Storage.Tests.Backup;

/// <summary>Full hot backups and their restore: one consistent state while writers commit, and damage refused with nothing left behind.</summary>
public sealed class A_full_backup
{
    private static readonly BackupTestWorkload Workload = new(keys: 600, deleteEvery: 7);

    private static byte[] Value(long i) => BackupTestWorkload.Value(i);

    private static void Commit(StorageEnvironment env, long i) => Workload.Commit(env, i);

    private static void AssertHolds(string directory, long expectedTransaction) => Workload.AssertRestored(directory, expectedTransaction);

    [Fact]
    public async Task Taken_while_a_writer_commits_restores_exactly_the_state_of_its_transaction()
    {
        using var dir = new TempDirectory();
        var source = dir.Combine("source");
        await using var env = StorageEnvironment.Open(source, TestOptions.Small);
        for (var i = 1; i <= 2000; i++) Commit(env, i);
        using var stop = new CancellationTokenSource();
        var writer = Task.Run(() =>
        {
            for (var i = 2001; !stop.IsCancellationRequested; i++) Commit(env, i);
        }, TestContext.Current.CancellationToken);

        var reports = new List<BackupProgress>();
        var backups = new List<(BackupResult Result, byte[] Bytes)>();
        // At least three, and on until the writer's commits show between the first and the last.
        while (backups.Count < 3 || (backups[^1].Result.TransactionId == backups[0].Result.TransactionId && backups.Count < 10_000))
        {
            using var stream = new MemoryStream();
            var result = await env.BackupAsync(stream, new SynchronousProgress<BackupProgress>(reports.Add), TestContext.Current.CancellationToken);
            backups.Add((result, stream.ToArray()));
            Assert.Equal(stream.Length, result.Bytes);
        }
        stop.Cancel();
        await writer;
        Assert.True(backups[^1].Result.TransactionId > backups[0].Result.TransactionId, "the writer committed while the backups were taken");
        Assert.Equal(reports[^1].PagesTotal, reports[^1].PagesWritten);

        var distinct = backups.DistinctBy(b => b.Result.TransactionId).ToList();
        foreach (var (result, bytes) in new[] { distinct[0], distinct[distinct.Count / 2], distinct[^1] }.DistinctBy(b => b.Result.TransactionId))
        {
            var target = dir.Combine($"restored-{result.TransactionId}");
            var restored = await StorageEnvironment.RestoreAsync(new MemoryStream(bytes), target, cancellationToken: TestContext.Current.CancellationToken);
            Assert.Equal(result.TransactionId, restored.TransactionId);
            Assert.Equal(result.Pages, restored.Pages);
            AssertHolds(target, result.TransactionId);
        }
    }

    [Fact]
    public async Task Restored_environment_goes_on_committing_from_the_backups_transaction()
    {
        using var dir = new TempDirectory();
        BackupResult result;
        await using (var env = StorageEnvironment.Open(dir.Combine("source"), TestOptions.Small))
        {
            for (var i = 1; i <= 300; i++) Commit(env, i);
            result = await env.BackupAsync(dir.Combine("backups"), cancellationToken: TestContext.Current.CancellationToken);
        }
        Assert.Equal(Path.Combine(dir.Combine("backups"), $"full-{result.TransactionId:D20}{StorageEnvironment.BackupFileExtension}"), result.Path);
        Assert.Equal([Path.GetFileName(result.Path)], Directory.GetFiles(dir.Combine("backups")).Select(Path.GetFileName));

        await StorageEnvironment.RestoreAsync(result.Path!, dir.Combine("restored"), cancellationToken: TestContext.Current.CancellationToken);
        using (var env = StorageEnvironment.Open(dir.Combine("restored"), TestOptions.Small))
        {
            for (var i = 301; i <= 400; i++) Commit(env, i);
            Assert.Equal(result.TransactionId + 100, env.GetStats().LastTransactionId);
        }
        AssertHolds(dir.Combine("restored"), result.TransactionId + 100);
    }

    [Fact]
    public async Task Streams_through_a_pipe_into_a_restore_reading_the_other_end()
    {
        using var dir = new TempDirectory();
        await using var env = StorageEnvironment.Open(dir.Combine("source"), TestOptions.Small);
        for (var i = 1; i <= 500; i++) Commit(env, i);
        var pipe = new Pipe(new PipeOptions(pauseWriterThreshold: 1 << 20, resumeWriterThreshold: 1 << 19));
        var restore = StorageEnvironment.RestoreAsync(pipe.Reader.AsStream(), dir.Combine("restored"), cancellationToken: TestContext.Current.CancellationToken);
        var backup = await env.BackupAsync(pipe.Writer, cancellationToken: TestContext.Current.CancellationToken);
        await pipe.Writer.CompleteAsync();
        var restored = await restore;
        Assert.Equal(backup.TransactionId, restored.TransactionId);
        Assert.Equal(backup.Bytes, restored.Bytes);
        AssertHolds(dir.Combine("restored"), backup.TransactionId);
    }

    [Fact]
    public async Task Cancelled_leaves_the_source_as_it_was_and_an_incomplete_stream_that_restore_refuses()
    {
        using var dir = new TempDirectory();
        await using var env = StorageEnvironment.Open(dir.Combine("source"), TestOptions.Small);
        for (var i = 1; i <= 1500; i++) Commit(env, i);
        using var cancel = new CancellationTokenSource();
        using var stream = new MemoryStream();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() =>
            env.BackupAsync(stream, new SynchronousProgress<BackupProgress>(p => cancel.Cancel()), cancel.Token));
        Assert.True(stream.Length > 0);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() =>
            env.BackupAsync(dir.Combine("backups"), new SynchronousProgress<BackupProgress>(p => cancel.Cancel()), cancel.Token));
        Assert.Empty(Directory.GetFiles(dir.Combine("backups")));

        var error = await Assert.ThrowsAsync<StorageCorruptedException>(() =>
            StorageEnvironment.RestoreAsync(new MemoryStream(stream.ToArray()), dir.Combine("restored"), cancellationToken: TestContext.Current.CancellationToken));
        Assert.Contains("incomplete", error.Message);
        AssertNothingLeft(dir.Path, "restored");
        Commit(env, 1501);
        Assert.True(env.Check().IsConsistent);
    }

    [Fact]
    public async Task Damaged_cut_or_reordered_is_refused_naming_the_offset_and_leaves_nothing()
    {
        using var dir = new TempDirectory();
        byte[] bytes;
        await using (var env = StorageEnvironment.Open(dir.Combine("source"), TestOptions.Small))
        {
            for (var i = 1; i <= 800; i++) Commit(env, i);
            using var stream = new MemoryStream();
            await env.BackupAsync(stream, cancellationToken: TestContext.Current.CancellationToken);
            bytes = stream.ToArray();
        }
        var blockBytes = 28 + 64 * 8192;
        var cases = new List<(string Name, byte[] Bytes, string Expected)>
        {
            ("flipped page byte", Flip(bytes, 160 + 28 + 5000), "checksum does not match"),
            ("flipped header byte", Flip(bytes, 40), "header's checksum"),
            ("cut inside a block", bytes[..(bytes.Length / 2)], "ends inside block"),
            ("cut before the trailer", bytes[..^40], "incomplete"),
            ("trailing bytes", [.. bytes, 1, 2, 3], "goes on after its trailer"),
            ("not a backup", Encoding.ASCII.GetBytes(new string('x', 4000)), "not a backup"),
            ("empty", [], "ends after 0 bytes"),
        };
        if (bytes.Length > 160 + 2 * blockBytes + 40)
        {
            // The second block where the first should be.
            var swapped = (byte[])bytes.Clone();
            Array.Copy(bytes, 160 + blockBytes, swapped, 160, blockBytes);
            Array.Copy(bytes, 160, swapped, 160 + blockBytes, blockBytes);
            cases.Add(("blocks swapped", swapped, "out of place"));
        }
        foreach (var (name, damaged, expected) in cases)
        {
            var error = await Assert.ThrowsAsync<StorageCorruptedException>(() =>
                StorageEnvironment.RestoreAsync(new MemoryStream(damaged), dir.Combine("restored"), cancellationToken: TestContext.Current.CancellationToken));
            Assert.True(error.Message.Contains(expected, StringComparison.Ordinal), $"{name}: {error.Message}");
            Assert.Equal(StorageErrorCode.Corrupted, error.ErrorCode);
            AssertNothingLeft(dir.Path, "restored");
        }
    }

    [Fact]
    public async Task Carries_only_pages_in_use_and_a_compacting_restore_cuts_the_file_to_them()
    {
        using var dir = new TempDirectory();
        BackupResult backup;
        long sourceFilePages, freePages;
        List<string> expected;
        await using (var env = StorageEnvironment.Open(dir.Combine("source"), TestOptions.Small))
        {
            for (var t = 0; t < 10; t++)
            {
                using var tx = env.BeginWrite();
                var big = tx.OpenOrCreateTree("t");
                for (var k = 0; k < 3000; k++) big.Put(Encoding.ASCII.GetBytes($"big-{t:D2}-{k:D5}"), Value(k));
                tx.Commit();
            }
            // A tree written after the first, so its pages come after; then the first goes, leaving its pages free
            // below the second's, in the file's numbering.
            using (var tx = env.BeginWrite())
            {
                var keep = tx.CreateTree("keep");
                for (var k = 0; k < 300; k++) keep.Put(Encoding.ASCII.GetBytes($"k{k:D4}"), Value(k));
                tx.Commit();
            }
            using (var tx = env.BeginWrite())
            {
                tx.DeleteTree("t");
                tx.Commit();
            }
            env.Checkpoint();
            sourceFilePages = env.GetStats().Space.PagesInUseOrFree;
            freePages = env.GetStats().Space.FreePages;
            backup = await env.BackupAsync(dir.Combine("backups"), cancellationToken: TestContext.Current.CancellationToken);
            using var read = env.BeginRead();
            expected = read.OpenTree("keep").Prefix([]).ToList().Select(e => Convert.ToHexString(e.Key) + Convert.ToHexString(e.Value)).ToList();
        }
        // Every page below the next page number but the free ones and the two file headers.
        Assert.True(freePages > 20, $"{freePages} free pages");
        Assert.Equal(sourceFilePages - freePages - 2, backup.Pages);

        await StorageEnvironment.RestoreAsync([backup.Path!], dir.Combine("plain"), cancellationToken: TestContext.Current.CancellationToken);
        await StorageEnvironment.RestoreAsync([backup.Path!], dir.Combine("compact"), compact: true, cancellationToken: TestContext.Current.CancellationToken);
        using (var plain = StorageEnvironment.Open(dir.Combine("plain"), TestOptions.Small))
        using (var compact = StorageEnvironment.Open(dir.Combine("compact"), TestOptions.Small))
        {
            Assert.True(compact.GetStats().Space.DataFileBytes < plain.GetStats().Space.DataFileBytes,
                $"compacted {compact.GetStats().Space.DataFileBytes} bytes against {plain.GetStats().Space.DataFileBytes} (pages {compact.GetStats().Space.PagesInUseOrFree} and {plain.GetStats().Space.PagesInUseOrFree})");
            using var a = plain.BeginRead();
            using var b = compact.BeginRead();
            Assert.Equal(expected, a.OpenTree("keep").Prefix([]).ToList().Select(e => Convert.ToHexString(e.Key) + Convert.ToHexString(e.Value)));
            Assert.Equal(expected, b.OpenTree("keep").Prefix([]).ToList().Select(e => Convert.ToHexString(e.Key) + Convert.ToHexString(e.Value)));
            Assert.True(plain.Check().IsConsistent);
            Assert.True(compact.Check().IsConsistent);
        }
    }

    [Fact]
    public async Task An_empty_target_directory_is_restored_into()
    {
        using var dir = new TempDirectory();
        using var stream = new MemoryStream();
        await using (var env = StorageEnvironment.Open(dir.Combine("source"), TestOptions.Small))
        {
            for (var i = 1; i <= 50; i++) Commit(env, i);
            await env.BackupAsync(stream, cancellationToken: TestContext.Current.CancellationToken);
        }
        Directory.CreateDirectory(dir.Combine("empty"));
        var restored = await StorageEnvironment.RestoreAsync(new MemoryStream(stream.ToArray()), dir.Combine("empty"), cancellationToken: TestContext.Current.CancellationToken);
        AssertHolds(dir.Combine("empty"), restored.TransactionId);
    }

    [Fact]
    public async Task A_target_that_holds_files_is_refused_and_kept()
    {
        using var dir = new TempDirectory();
        using var stream = new MemoryStream();
        await using (var env = StorageEnvironment.Open(dir.Combine("source"), TestOptions.Small))
        {
            Commit(env, 1);
            await env.BackupAsync(stream, cancellationToken: TestContext.Current.CancellationToken);
        }
        Directory.CreateDirectory(dir.Combine("busy"));
        File.WriteAllText(Path.Combine(dir.Combine("busy"), "mine.txt"), "mine");
        var error = await Assert.ThrowsAsync<StorageException>(() =>
            StorageEnvironment.RestoreAsync(new MemoryStream(stream.ToArray()), dir.Combine("busy"), cancellationToken: TestContext.Current.CancellationToken));
        Assert.Equal(StorageErrorCode.NotAnEnvironment, error.ErrorCode);
        Assert.Equal(["mine.txt"], Directory.GetFileSystemEntries(dir.Combine("busy")).Select(Path.GetFileName));
    }

    [Fact]
    public async Task Held_to_its_byte_rate_takes_at_least_its_bytes_over_the_rate_and_restores_the_same()
    {
        using var dir = new TempDirectory();
        var source = dir.Combine("source");
        long bytes;
        await using (var env = StorageEnvironment.Open(source, TestOptions.Small))
        {
            for (var i = 1; i <= 400; i++) Commit(env, i);
            bytes = (await env.BackupAsync(Stream.Null, cancellationToken: TestContext.Current.CancellationToken)).Bytes;
        }
        // A rate that takes a quarter of a second for the whole backup.
        var rate = bytes * 4;
        BackupResult result;
        await using (var env = StorageEnvironment.Open(source, TestOptions.Small with { BackupBytesPerSecond = rate }))
        {
            var clock = System.Diagnostics.Stopwatch.StartNew();
            result = await env.BackupAsync(dir.Combine("backups"), cancellationToken: TestContext.Current.CancellationToken);
            // The last block waits until it is due, less the timer's grain it does not wait for.
            Assert.True(clock.Elapsed >= TimeSpan.FromSeconds((double)result.Bytes / rate) - TimeSpan.FromMilliseconds(3),
                $"{result.Bytes} bytes at {rate} a second took {clock.Elapsed.TotalMilliseconds} ms");
        }
        Assert.Equal(bytes, result.Bytes);
        await StorageEnvironment.RestoreAsync(result.Path!, dir.Combine("restored"), cancellationToken: TestContext.Current.CancellationToken);
        AssertHolds(dir.Combine("restored"), 400);
    }

    [Fact]
    public async Task Deletes_what_backups_killed_before_they_finished_left_and_nothing_else()
    {
        using var dir = new TempDirectory();
        var backups = Directory.CreateDirectory(dir.Combine("backups")).FullName;
        string Partial() => Path.Combine(backups, $".backup-{Guid.NewGuid():N}.partial");
        var magic = new byte[8];
        System.Buffers.Binary.BinaryPrimitives.WriteUInt64LittleEndian(magic, Storage.Backup.BackupFormat.HeaderMagic);

        // Left by killed backups: one with a header and a block begun, one killed before its first byte, one in its magic.
        var abandoned = new[] { Partial(), Partial(), Partial() };
        File.WriteAllBytes(abandoned[0], [.. magic, .. new byte[5000]]);
        File.WriteAllBytes(abandoned[1], []);
        File.WriteAllBytes(abandoned[2], magic[..3]);
        // Not provably abandoned backups: one being written (its writer holds it), one with other content, other names.
        var beingWritten = Partial();
        using var writer = new FileStream(beingWritten, FileMode.CreateNew, FileAccess.Write, FileShare.None);
        writer.Write(magic);
        writer.Flush();
        var foreign = Partial();
        File.WriteAllText(foreign, "not a backup, whatever its name");
        var others = new[] { Path.Combine(backups, ".backup-notahexname0000000000000000000.partial"), Path.Combine(backups, "notes.partial"), Path.Combine(backups, ".backup-x.partial") };
        foreach (var other in others) File.WriteAllBytes(other, magic);

        await using (var env = StorageEnvironment.Open(dir.Combine("source"), TestOptions.Small))
        {
            Commit(env, 1);
            var result = await env.BackupAsync(backups, cancellationToken: TestContext.Current.CancellationToken);
            Assert.True(File.Exists(result.Path));
        }

        Assert.All(abandoned, path => Assert.False(File.Exists(path), path));
        Assert.True(File.Exists(beingWritten));
        Assert.True(File.Exists(foreign));
        Assert.All(others, path => Assert.True(File.Exists(path), path));
        writer.Dispose();
    }

    [Fact]
    public void A_negative_byte_rate_is_refused()
    {
        using var dir = new TempDirectory();
        var error = Assert.Throws<ArgumentOutOfRangeException>(() => StorageEnvironment.Open(dir.Combine("env"), TestOptions.Small with { BackupBytesPerSecond = -1 }));
        Assert.Equal(nameof(StorageOptions.BackupBytesPerSecond), error.ParamName);
    }

    private static byte[] Flip(byte[] bytes, int at)
    {
        var copy = (byte[])bytes.Clone();
        copy[at] ^= 0x40;
        return copy;
    }

    /// <summary>No target and no temporary restore directory beside it.</summary>
    private static void AssertNothingLeft(string parent, string target)
    {
        Assert.False(Directory.Exists(Path.Combine(parent, target)));
        Assert.Empty(Directory.GetDirectories(parent, $".{target}.restoring-*"));
    }

    /// <summary>Reports on the calling thread (<see cref="Progress{T}"/> would post to the thread pool).</summary>
    private sealed class SynchronousProgress<T>(Action<T> report) : IProgress<T>
    {
        public void Report(T value) => report(value);
    }
}
