using System.Diagnostics;
using Storage.Inspection;
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
/// <para>First the snapshot is checked by the library's checker, which also says what every page is; a snapshot that is
/// not consistent is not backed up. Then every page that is not free and not a file header is written, in blocks of up
/// to <see cref="BackupFormat.MaxPagesPerBlock"/> consecutive pages, each with its CRC.</para>
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
        var report = EnvironmentChecker.Check(source, collectPages: true, progress: null);
        if (!report.IsConsistent)
        {
            throw new StorageCorruptedException(
                $"The environment is not consistent at transaction {report.TransactionId}, so it is not backed up: {string.Join("; ", report.Problems.Where(p => p.Severity == ProblemSeverity.Error).Take(3))}",
                environment.DataFile.Path);
        }
        var pages = report.Pages!;
        var total = pages.LongCount(p => Included(p.Kind));
        var buffer = new byte[BackupFormat.BlockHeaderBytes + BackupFormat.MaxPagesPerBlock * PageLayout.PageSizeBytes];
        BackupFormat.WriteHeader(buffer, new BackupFormat.Header(environment.EnvironmentId, source.TransactionId, source.NextPageNumber, source.RootTree,
            FileHeader.CurrentFormatVersion, DateTime.UtcNow));
        await write(buffer.AsMemory(0, BackupFormat.HeaderBytes), cancellationToken).ConfigureAwait(false);
        long bytes = BackupFormat.HeaderBytes, written = 0, blocks = 0;
        var blockCrcs = Platform.Crc32C.Start(0);
        long runStart = -1;
        var page = 0L;
        while (page < pages.Length)
        {
            if (!Included(pages[page].Kind))
            {
                page++;
                continue;
            }
            // One block: consecutive pages in use, at most a block's worth.
            var first = page;
            var count = 0;
            while (page < pages.Length && count < BackupFormat.MaxPagesPerBlock && Included(pages[page].Kind))
            {
                if (pages[page].Kind == PageKind.Overflow) runStart = page;
                var destination = buffer.AsSpan(BackupFormat.BlockHeaderBytes + count * PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
                var read = pages[page].Kind == PageKind.OverflowContinuation
                    ? source.TryReadRunPage(runStart, page - runStart, destination, out var problem)
                    : source.TryReadPage(page, destination, out problem);
                if (!read) throw new StorageCorruptedException($"Page {page} of transaction {source.TransactionId} could not be read for the backup: {problem}", environment.DataFile.Path, page);
                count++;
                page++;
            }
            cancellationToken.ThrowIfCancellationRequested();
            var blockLength = BackupFormat.BlockHeaderBytes + count * PageLayout.PageSizeBytes;
            var crc = BackupFormat.WriteBlockHeader(buffer, blocks, first, count, buffer.AsSpan(BackupFormat.BlockHeaderBytes, count * PageLayout.PageSizeBytes));
            await write(buffer.AsMemory(0, blockLength), cancellationToken).ConfigureAwait(false);
            blockCrcs = BackupFormat.FoldBlockCrc(blockCrcs, crc);
            blocks++;
            written += count;
            bytes += blockLength;
            progress?.Report(new BackupProgress(written, total, bytes));
        }
        BackupFormat.WriteTrailer(buffer, blocks, written, Platform.Crc32C.Finish(blockCrcs));
        await write(buffer.AsMemory(0, BackupFormat.TrailerBytes), cancellationToken).ConfigureAwait(false);
        bytes += BackupFormat.TrailerBytes;
        return new BackupResult(source.TransactionId, written, bytes, Stopwatch.GetElapsedTime(started), path);
    }

    /// <summary>Pages a backup carries: everything in use at the snapshot but the two file headers, which a restore writes anew.</summary>
    private static bool Included(PageKind kind) => kind is not (PageKind.Free or PageKind.FileHeader);
}
