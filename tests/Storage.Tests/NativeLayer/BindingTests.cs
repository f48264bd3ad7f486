using Microsoft.Win32.SafeHandles;
using Storage.Paging;
using Storage.Platform;
using Storage.Scratch;
using Storage.Tests.Support;
using Xunit;

namespace Storage.Tests.NativeLayer;

/// <summary>
/// The native layer through its managed bindings: merged ring writes, journal writes, links, memory figures,
/// and failures turned into typed exceptions carrying the OS error and the path. Linux x64, where CI builds it.
/// </summary>
public sealed unsafe class BindingTests
{
    [FactNeeding(Need.LinuxX64, "Testing the native layer's bindings")]
    public void TheLibraryLoadsWithTheExpectedVersion()
    {
        Assert.True(Pal.IsAvailable, Pal.UnavailableReason);
        Assert.Equal(PalNative.ExpectedVersion, PalNative.Version());
    }

    [FactNeeding(Need.LinuxX64, "Testing the native layer's bindings")]
    public void RingWritesLandByteExactAndAdjacentPagesMerge()
    {
        using var temp = new TempDirectory();
        var path = temp.Combine("data");
        // Pages 3, 4, 5 (a run), 9, and a two-page buffer at 10-11 (adjacent to 9): two writes.
        var layout = new (long Page, int Count)[] { (3, 1), (4, 1), (5, 1), (9, 1), (10, 2) };
        var buffers = layout.Select(p => Fill(new ScratchBuffer(p.Count), p.Page)).ToArray();
        try
        {
            using var handle = File.OpenHandle(path, FileMode.CreateNew, FileAccess.ReadWrite);
            using var writer = new RingDataFileWriter(Pal.SharedWriter(lowPriority: true, out var problem) ?? throw new InvalidOperationException(problem));
            var pages = layout.Select((p, i) => (p.Page, buffers[i])).ToList();
            var runs = writer.Write(handle, path, pages, faults: null);
            writer.Sync(handle, path, faults: null);
            Assert.Equal(2, runs);

            var file = File.ReadAllBytes(path);
            Assert.Equal(12 * PageLayout.PageSizeBytes, file.Length);
            for (var page = 0; page < 12; page++)
            {
                var content = file.AsSpan(page * PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
                var written = page is 3 or 4 or 5 or 9 or 10 or 11;
                for (var b = 0; b < content.Length; b += 1021)
                {
                    Assert.Equal(written ? Pattern(page, b) : (byte)0, content[b]);
                }
            }
        }
        finally
        {
            foreach (var buffer in buffers) buffer.Release();
        }
    }

    [FactNeeding(Need.LinuxX64, "Testing the native layer's bindings")]
    public void ConcurrentSubmittersOnManyFilesShareTheRing()
    {
        using var temp = new TempDirectory();
        var ring = Pal.SharedWriter(lowPriority: true, out _)!;
        const int files = 8;
        const int pagesPerFile = 200;
        Parallel.For(0, files, new ParallelOptions { MaxDegreeOfParallelism = files }, f =>
        {
            var path = temp.Combine($"file-{f}");
            var buffers = Enumerable.Range(0, pagesPerFile).Select(p => Fill(new ScratchBuffer(1), f * 1000 + p * 3)).ToArray();
            try
            {
                using var handle = File.OpenHandle(path, FileMode.CreateNew, FileAccess.ReadWrite);
                using var writer = new RingDataFileWriter(ring);
                // Every third page: scattered, one write each.
                var runs = writer.Write(handle, path, buffers.Select((b, p) => ((long)p * 3, b)).ToList(), faults: null);
                writer.Sync(handle, path, faults: null);
                Assert.Equal(pagesPerFile, runs);
            }
            finally
            {
                foreach (var buffer in buffers) buffer.Release();
            }
            var file = File.ReadAllBytes(path);
            for (var p = 0; p < pagesPerFile; p++)
            {
                Assert.Equal(Pattern(f * 1000 + p * 3, 17), file[p * 3 * PageLayout.PageSizeBytes + 17]);
            }
        });
    }

    [FactNeeding(Need.LinuxX64, "Testing the native layer's bindings")]
    public void AFailedRingWriteCarriesTheErrorAndThePath()
    {
        using var temp = new TempDirectory();
        var path = temp.Combine("read-only");
        File.WriteAllBytes(path, new byte[PageLayout.PageSizeBytes]);
        var buffer = Fill(new ScratchBuffer(1), 0);
        try
        {
            using var handle = File.OpenHandle(path, FileMode.Open, FileAccess.Read);
            using var writer = new RingDataFileWriter(Pal.SharedWriter(lowPriority: true, out _)!);
            var error = Assert.Throws<StorageException>(() => writer.Write(handle, path, [(0L, buffer)], faults: null));
            Assert.Equal(StorageErrorCode.IoFailure, error.ErrorCode);
            Assert.Equal(9, error.OsError); // EBADF: the descriptor is not open for writing
            Assert.Equal(path, error.Path);
            Assert.Contains(path, error.Message, StringComparison.Ordinal);
        }
        finally
        {
            buffer.Release();
        }
    }

    [FactNeeding(Need.LinuxX64, "Testing the native layer's bindings")]
    public void JournalWritesAreDurableAlignedWrites()
    {
        using var temp = new TempDirectory();
        var path = temp.Combine("0001.journal");
        using var aligned = new AlignedBuffer(8192);
        var span = new Span<byte>(aligned.Pointer, 8192);
        for (var i = 0; i < span.Length; i++) span[i] = (byte)(i * 7);
        using (var journal = Pal.OpenJournal(path, create: true, out var direct))
        {
            Assert.True(direct, "the test directory is on a disk file system, which takes O_DIRECT");
            Pal.JournalPresize(journal, path, 64 << 10);
            Pal.JournalWrite(journal, path, aligned.Pointer, 8192, 16384);
            // O_DIRECT needs aligned offsets: a misaligned write is refused, naming the file.
            var error = Assert.Throws<StorageException>(() => Pal.JournalWrite(journal, path, aligned.Pointer, 8192, 100));
            Assert.Equal(22, error.OsError);
            Assert.Equal(path, error.Path);
        }
        var file = File.ReadAllBytes(path);
        Assert.Equal(64 << 10, file.Length);
        Assert.True(file.AsSpan(16384, 8192).SequenceEqual(span));
        Assert.True(file.AsSpan(0, 16384).IndexOfAnyExcept((byte)0) < 0);
    }

    [FactNeeding(Need.LinuxX64, "Testing the native layer's bindings")]
    public void HardLinksAndSameFileChecks()
    {
        using var temp = new TempDirectory();
        var original = temp.Combine("a");
        var link = temp.Combine("b");
        var other = temp.Combine("c");
        File.WriteAllText(original, "x");
        File.WriteAllText(other, "x");
        Pal.HardLink(original, link);
        Assert.True(Pal.SameFile(original, link));
        Assert.False(Pal.SameFile(original, other));
        var error = Assert.Throws<StorageException>(() => Pal.HardLink(original, other));
        Assert.Equal(17, error.OsError); // EEXIST
        Assert.Equal(other, error.Path);
        var missing = Assert.Throws<StorageException>(() => Pal.SameFile(original, temp.Combine("missing")));
        Assert.Equal(2, missing.OsError); // ENOENT
        Pal.FsyncDirectory(temp.Path);
    }

    [FactNeeding(Need.LinuxX64, "Testing the native layer's bindings")]
    public void MemoryFiguresComeFromSmapsRollup()
    {
        var stats = Pal.ReadMemoryStats();
        Assert.Equal(PalNative.MemRss | PalNative.MemPss | PalNative.MemPrivateDirty | PalNative.MemAnonymous | PalNative.MemSwap, stats.Valid);
        Assert.True(stats.Rss > 1 << 20, $"RSS {stats.Rss}");
        Assert.True(stats.Anonymous > 0 && stats.Anonymous <= stats.Rss);
    }

    [Fact]
    public void DiskFullErrorsAreStorageFullExceptions()
    {
        var full = Pal.Error(PalNative.StatusSystem, OperatingSystem.IsWindows() ? 112 : 28, "write", "/x/data.storage");
        Assert.IsType<StorageFullException>(full);
        Assert.Equal(StorageErrorCode.DiskFull, full.ErrorCode);
        var invalid = Pal.Error(PalNative.StatusInvalid, 22, "write", "/x/data.storage");
        Assert.Equal(StorageErrorCode.IoFailure, invalid.ErrorCode);
        Assert.Equal("/x/data.storage", invalid.Path);
    }

    private static byte Pattern(long page, int offset) => (byte)(page * 31 + offset * 7 + 1);

    private static ScratchBuffer Fill(ScratchBuffer buffer, long firstPage)
    {
        for (var p = 0; p < buffer.PageCount; p++)
        {
            var page = new Span<byte>(buffer.Pointer + (long)p * PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
            for (var b = 0; b < page.Length; b++) page[b] = Pattern(firstPage + p, b);
        }
        return buffer;
    }
}
