using System.Diagnostics;
using System.IO.MemoryMappedFiles;
using System.Runtime.InteropServices;
using Storage.Tests.Support;
using Xunit;

namespace Storage.Tests.PagingTests;

/// <summary>
/// What the engine reads from the device on a cold data file: with the map advised for random access a point lookup
/// brings in about the pages it touches (not the kernel's read-ahead window around each fault), a cursor asks for the
/// leaves ahead of it, and turning the advice off gives the map back to the kernel's read-ahead. Residency is read with
/// mincore() through a mapping of the test's own, after the file was dropped from the page cache. Linux only.
/// </summary>
[Collection(nameof(ReadAheadTests))]
[CollectionDefinition(nameof(ReadAheadTests), DisableParallelization = true)]
public sealed unsafe partial class ReadAheadTests
{
    private const int Entries = 12_000;
    private const int ValueBytes = 1_000;

    [FactNeeding(Need.Linux, "Measuring page residency (mincore) under madvise read-ahead")]
    public void A_cold_point_lookup_reads_about_the_pages_it_touches()
    {
        using var dir = FilledDirectory(out var dataPath);
        var fileOsPages = new FileInfo(dataPath).Length / Environment.SystemPageSize;

        DropFromPageCache(dataPath);
        using (var env = StorageEnvironment.Open(dir.Path))
        using (var tx = env.BeginRead())
        {
            var tree = tx.OpenTree("t");
            Assert.True(tree.TryGet(Key(Entries / 2), out var value));
            Assert.Equal(ValueBytes, value.Length);
            var resident = ResidentOsPages(dataPath);
            // The open reads the file header, the root tree and the free-space bitmap; the lookup reads a root, a branch
            // and a leaf. Each 8 KiB page is two OS pages. The kernel's read-ahead alone would bring in 32 OS pages (the
            // 128 KiB default) or more around every one of these faults.
            Assert.True(resident <= 40, $"{resident} of {fileOsPages} OS pages of the data file are in the page cache after one cold lookup.");
        }
    }

    [FactNeeding(Need.Linux, "Measuring page residency (mincore) under madvise read-ahead")]
    public void Without_the_random_access_advice_the_kernel_reads_ahead_around_a_fault()
    {
        using var dir = FilledDirectory(out var dataPath);
        var readAheadBytes = DeviceReadAheadBytes(dataPath);
        // A device that reads little or nothing ahead cannot show the difference.
        if (readAheadBytes is not >= 64 * 1024)
            Assert.Skip($"The kernel's read-ahead around a fault needs a device that reads ahead at least 64 KiB; this one reads {(readAheadBytes is { } bytes ? $"{bytes / 1024} KiB" : "an amount that cannot be told")}.");

        DropFromPageCache(dataPath);
        using var env = StorageEnvironment.Open(dir.Path, StorageOptions.Default with { RandomAccessMap = false });
        using var tx = env.BeginRead();
        Assert.True(tx.OpenTree("t").TryGet(Key(Entries / 2), out _));
        var resident = ResidentOsPages(dataPath);
        Assert.True(resident > 40, $"Only {resident} OS pages are in the page cache with the kernel's read-ahead of {readAheadBytes} bytes.");
    }

    [FactNeeding(Need.Linux, "Measuring page residency (mincore) under madvise read-ahead")]
    public void A_cursor_asks_for_the_leaves_ahead_of_it_in_either_direction()
    {
        using var dir = FilledDirectory(out var dataPath);

        foreach (var forward in new[] { true, false })
        {
            DropFromPageCache(dataPath);
            using var env = StorageEnvironment.Open(dir.Path);
            using var tx = env.BeginRead();
            var cursor = tx.OpenTree("t").CreateCursor();
            var before = ResidentOsPages(dataPath);
            Assert.True(forward ? cursor.SeekFirst() : cursor.SeekLast());
            // About eight leaves' worth of entries: the cursor steps into a few siblings, each step asking for more ahead.
            var steps = 0;
            while (steps < 60 && (forward ? cursor.MoveNext() : cursor.MovePrevious())) steps++;
            Assert.Equal(60, steps);
            // 8 entries fit a leaf, so 60 steps touch 8 leaves: 16 OS pages, plus the descent's. What was asked for ahead
            // comes in without being touched; the requests are asynchronous, so wait for them (bounded).
            var touchedBound = before + 2 * (8 + 4);
            var clock = Stopwatch.StartNew();
            long resident;
            while ((resident = ResidentOsPages(dataPath)) <= touchedBound + 16 && clock.Elapsed < TimeSpan.FromSeconds(20)) Thread.Yield();
            Assert.True(resident > touchedBound + 16, $"{(forward ? "Forward" : "Backward")}: {resident} OS pages in the page cache, {before} before the scan.");

            // And the whole scan still sees every entry, in order.
            long count = 1;
            while (forward ? cursor.MoveNext() : cursor.MovePrevious()) count++;
            Assert.Equal(Entries - 60, count);
        }
    }

    /// <summary>A new directory holding an environment of <see cref="Entries"/> entries, closed; its data file's path.</summary>
    private static TempDirectory FilledDirectory(out string dataPath)
    {
        var dir = new TempDirectory("readahead");
        Fill(dir.Path);
        dataPath = Path.Combine(dir.Path, "data.storage");
        return dir;
    }

    private static void Fill(string directory)
    {
        using var env = StorageEnvironment.Open(directory);
        var value = new byte[ValueBytes];
        for (var batch = 0; batch < Entries; batch += 2_000)
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenOrCreateTree("t");
            for (var i = batch; i < batch + 2_000; i++)
            {
                value.AsSpan().Fill((byte)i);
                tree.Put(Key(i), value);
            }
            tx.Commit();
        }
    }

    private static byte[] Key(int i) => System.Text.Encoding.ASCII.GetBytes($"key-{i:D8}");

    private static void DropFromPageCache(string path)
    {
        using var handle = File.OpenHandle(path, FileMode.Open, FileAccess.ReadWrite);
        RandomAccess.FlushToDisk(handle);
        Assert.Equal(0, PosixFadvise(handle.DangerousGetHandle(), 0, 0, 4 /* POSIX_FADV_DONTNEED */));
        // The drop is immediate for clean pages; a page that is still resident is one that cannot be dropped.
        Assert.True(ResidentOsPages(path) <= 2, "the data file could not be dropped from the page cache");
    }

    /// <summary>How many OS pages of the file are in the page cache (mincore through a mapping of the test's own).</summary>
    private static long ResidentOsPages(string path)
    {
        var length = new FileInfo(path).Length;
        using var file = MemoryMappedFile.CreateFromFile(path, FileMode.Open, null, 0, MemoryMappedFileAccess.Read);
        using var view = file.CreateViewAccessor(0, length, MemoryMappedFileAccess.Read);
        byte* pointer = null;
        view.SafeMemoryMappedViewHandle.AcquirePointer(ref pointer);
        try
        {
            var pages = (length + Environment.SystemPageSize - 1) / Environment.SystemPageSize;
            var vector = new byte[pages];
            fixed (byte* v = vector)
            {
                Assert.Equal(0, Mincore(pointer + view.PointerOffset, (nuint)length, v));
            }
            return vector.Count(b => (b & 1) != 0);
        }
        finally
        {
            view.SafeMemoryMappedViewHandle.ReleasePointer();
        }
    }

    /// <summary>The read-ahead of the block device holding <paramref name="path"/>, or null when it cannot be told.</summary>
    private static long? DeviceReadAheadBytes(string path)
    {
        // The mount holding the path (the longest mount point that prefixes it) names the device as major:minor, and
        // the kernel's read-ahead for it is that device's backing-device setting.
        var full = Path.GetFullPath(path);
        string? device = null;
        var longest = -1;
        foreach (var line in File.ReadLines("/proc/self/mountinfo"))
        {
            var fields = line.Split(' ');
            if (fields.Length < 5) continue;
            var mountPoint = fields[4];
            var prefix = mountPoint.EndsWith('/') ? mountPoint : mountPoint + "/";
            if ((full.StartsWith(prefix, StringComparison.Ordinal) || full == mountPoint) && mountPoint.Length > longest)
            {
                longest = mountPoint.Length;
                device = fields[2];
            }
        }
        var setting = $"/sys/class/bdi/{device}/read_ahead_kb";
        return device is not null && File.Exists(setting) && long.TryParse(File.ReadAllText(setting).Trim(), out var kb) ? kb * 1024 : null;
    }

    [LibraryImport("libc", EntryPoint = "posix_fadvise")]
    private static partial int PosixFadvise(nint fd, long offset, long length, int advice);

    [LibraryImport("libc", EntryPoint = "mincore", SetLastError = true)]
    private static partial int Mincore(void* address, nuint length, byte* vector);
}
