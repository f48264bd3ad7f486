using System.Diagnostics;
using Storage.Inspection;
using Storage.Allocation;
using Storage.Paging;
using Storage.State;

namespace Storage.Backup;

/// <summary>
/// A full hot backup: every page in use at one committed transaction, read through a read transaction while writers
/// go on, and written as a <see cref="BackupFormat"/> stream.
/// </summary>
/// <remarks>
/// <para>How it stays consistent: the read transaction is a snapshot, as any reader's. Its pages are the versions of
/// that transaction, from scratch memory or the data file; the flusher keeps writing, but never over a page the
/// snapshot may still read from the data file (the newer versions wait in scratch, which spills to the scratch file
/// past its budget). The cost of a long backup is that scratch: the pages written meanwhile, held until the backup's
/// transaction ends (see <see cref="MemoryUse.PinnedBytes"/>).</para>
/// <para>The snapshot's free-space bitmaps say which pages are free; every other page but the two file headers is
/// written, as the snapshot sees it (a version in memory, or the data file's), in blocks of up to
/// <see cref="BackupFormat.MaxPagesPerBlock"/> consecutive pages, each with its CRC. Pages are not checked here: the
/// restore checks the whole result with the library's checker before it puts it in place.</para>
/// </remarks>
internal static class EnvironmentBackup
{
    /// <summary>Writes the full backup to <paramref name="write"/>, which takes each buffer in turn.</summary>
    public static async Task<BackupResult> WriteAsync(StorageEnvironment environment, Func<ReadOnlyMemory<byte>, CancellationToken, ValueTask> write,
        string? path, IProgress<BackupProgress>? progress, CancellationToken cancellationToken)
    {
        var started = Stopwatch.GetTimestamp();
        using var transaction = environment.BeginRead();
        using var source = new TransactionCheckSource(environment, transaction);
        // Pages in the data file are read with one positional read per stretch: cheaper than faulting them in through the map.
        using var dataFile = File.OpenHandle(environment.DataFile.Path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        var next = source.NextPageNumber;
        var free = ReadFreePages(source, environment.DataFile.Path);
        var total = 0L;
        for (var p = 0L; p < next; p++) if (Included(p, free)) total++;
        var buffer = new byte[BackupFormat.BlockHeaderBytes + BackupFormat.MaxPagesPerBlock * PageLayout.PageSizeBytes];
        BackupFormat.WriteHeader(buffer, new BackupFormat.Header(environment.EnvironmentId, source.TransactionId, next, source.RootTree,
            FileHeader.CurrentFormatVersion, DateTime.UtcNow));
        await write(buffer.AsMemory(0, BackupFormat.HeaderBytes), cancellationToken).ConfigureAwait(false);
        long bytes = BackupFormat.HeaderBytes, written = 0, blocks = 0;
        var blockCrcs = Platform.Crc32C.Start(0);
        var pace = new RateLimit(environment.Options.BackupBytesPerSecond, started);
        // A version in memory may be a run of pages (an overflow value): its pages are taken from it in turn.
        var run = new MemoryRun();
        var page = 0L;
        while (page < next)
        {
            if (!Included(page, free))
            {
                run = default;
                page++;
                continue;
            }
            var first = page;
            var count = 0;
            var fileStretch = -1; // the first page of the current stretch to read from the data file, in this block
            while (page < next && count < BackupFormat.MaxPagesPerBlock && Included(page, free))
            {
                var destination = buffer.AsSpan(BackupFormat.BlockHeaderBytes + count * PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
                if (ReadPageFromMemory(source, page, destination, ref run))
                {
                    if (fileStretch >= 0) ReadStretch(dataFile, environment.DataFile.Path, buffer, first, fileStretch, count, source);
                    fileStretch = -1;
                }
                else if (fileStretch < 0)
                {
                    fileStretch = count;
                }
                count++;
                page++;
            }
            if (fileStretch >= 0) ReadStretch(dataFile, environment.DataFile.Path, buffer, first, fileStretch, count, source);
            cancellationToken.ThrowIfCancellationRequested();
            var blockLength = BackupFormat.BlockHeaderBytes + count * PageLayout.PageSizeBytes;
            var crc = BackupFormat.WriteBlockHeader(buffer, blocks, first, count, buffer.AsSpan(BackupFormat.BlockHeaderBytes, count * PageLayout.PageSizeBytes));
            await write(buffer.AsMemory(0, blockLength), cancellationToken).ConfigureAwait(false);
            blockCrcs = BackupFormat.FoldBlockCrc(blockCrcs, crc);
            blocks++;
            written += count;
            bytes += blockLength;
            progress?.Report(new BackupProgress(written, total, bytes));
            await pace.WaitAsync(bytes, cancellationToken).ConfigureAwait(false);
        }
        BackupFormat.WriteTrailer(buffer, blocks, written, Platform.Crc32C.Finish(blockCrcs));
        await write(buffer.AsMemory(0, BackupFormat.TrailerBytes), cancellationToken).ConfigureAwait(false);
        bytes += BackupFormat.TrailerBytes;
        return new BackupResult(source.TransactionId, written, bytes, Stopwatch.GetElapsedTime(started), path);
    }

    /// <summary>What is left of a version in memory that spans several pages, while its pages are copied one by one.</summary>
    private unsafe struct MemoryRun
    {
        public byte* Next;
        public int PagesLeft;
    }

    /// <summary>Copies the snapshot's version of <paramref name="page"/> when it is in memory (a run being copied, or a version); false when it is the data file's.</summary>
    private static unsafe bool ReadPageFromMemory(TransactionCheckSource source, long page, Span<byte> destination, ref MemoryRun run)
    {
        if (run.PagesLeft == 0 && source.TryGetVersionInMemory(page, out var version, out var pageCount))
        {
            run.Next = version;
            run.PagesLeft = pageCount;
        }
        if (run.PagesLeft == 0) return false;
        new ReadOnlySpan<byte>(run.Next, PageLayout.PageSizeBytes).CopyTo(destination);
        run.Next += PageLayout.PageSizeBytes;
        run.PagesLeft--;
        return true;
    }

    /// <summary>Reads the block's pages [<paramref name="from"/>, <paramref name="to"/>) from the data file in one positional read.</summary>
    private static void ReadStretch(Microsoft.Win32.SafeHandles.SafeFileHandle dataFile, string dataPath, byte[] buffer, long firstPage, int from, int to, TransactionCheckSource source)
    {
        var span = buffer.AsSpan(BackupFormat.BlockHeaderBytes + from * PageLayout.PageSizeBytes, (to - from) * PageLayout.PageSizeBytes);
        var offset = (firstPage + from) * (long)PageLayout.PageSizeBytes;
        var read = Platform.FileIo.Read(dataFile, dataPath, span, offset);
        if (read < span.Length)
        {
            throw new StorageCorruptedException(
                $"Pages {firstPage + from}-{firstPage + to - 1} of transaction {source.TransactionId} could not be read for the backup: the data file ends at byte {offset + read}", dataPath, firstPage + from);
        }
    }

    /// <summary>The pages marked free in the snapshot's free-space bitmaps, as one bit each.</summary>
    private static ulong[] ReadFreePages(TransactionCheckSource source, string dataPath)
    {
        var next = source.NextPageNumber;
        var free = new ulong[(next + 63) / 64];
        var page = new byte[PageLayout.PageSizeBytes];
        for (long region = 0; FreeSpaceLayout.RegionStart(region) < next; region++)
        {
            for (var i = 0; i < FreeSpaceLayout.BitmapPagesPerRegion; i++)
            {
                var bitmapPage = FreeSpaceLayout.RegionStart(region) + 2 + i;
                if (bitmapPage >= next) break;
                if (!source.TryReadPage(bitmapPage, page, out var problem))
                {
                    throw new StorageCorruptedException($"Free-space bitmap page {bitmapPage} could not be read for the backup: {problem}", dataPath, bitmapPage);
                }
                var words = System.Runtime.InteropServices.MemoryMarshal.Cast<byte, ulong>(page.AsSpan(FreeSpaceLayout.BitmapOffsetBytes, FreeSpaceLayout.BitmapBytes));
                var firstPage = FreeSpaceLayout.FirstPageOfBitmap(bitmapPage);
                for (var w = 0; w < words.Length && firstPage + w * 64L < next; w++)
                {
                    var bits = words[w];
                    if (bits == 0) continue;
                    var index = (firstPage + w * 64L) / 64;
                    // Bitmap words cover 64 pages from a multiple of 64; pages past the next page number are not in the state.
                    if (index < free.Length) free[index] |= bits;
                }
            }
        }
        return free;
    }

    /// <summary>Pages a backup carries: every page below the next page number but the two file headers and the pages marked free.</summary>
    private static bool Included(long page, ulong[] free) => page >= 2 && (free[page >> 6] & (1UL << (int)(page & 63))) == 0;
}
