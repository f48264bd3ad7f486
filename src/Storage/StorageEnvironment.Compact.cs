using System.Diagnostics;
using Storage.Paging;

namespace Storage;

public sealed partial class StorageEnvironment
{
    /// <summary>Compaction moves at most this many pages in one transaction (its journal entry holds each moved page whole).</summary>
    private const int CompactionPagesPerTransaction = 512;

    /// <summary>
    /// Gives free space inside the data file back to the file system while the environment stays in use: pages near the
    /// end of the file move into free pages lower down, through ordinary write transactions of at most
    /// <see cref="CompactionPagesPerTransaction"/> pages each (other writers run between them; readers keep their
    /// snapshots), until the pages in use lie below the end they need; then a checkpoint syncs that, cuts the file there,
    /// and punches out the free runs left inside it.
    /// </summary>
    /// <param name="progress">Told after each transaction.</param>
    /// <param name="cancellationToken">Checked between transactions; what was committed stays.</param>
    /// <exception cref="OperationCanceledException">Cancelled between transactions.</exception>
    /// <exception cref="StorageFullException">The disk filled while pages moved (a moved page needs a block before its old one is freed).</exception>
    public CompactionResult Compact(IProgress<CompactionProgress>? progress = null, CancellationToken cancellationToken = default)
    {
        EnsureWritable();
        var started = Stopwatch.GetTimestamp();
        var before = DataFile.PageCount * Paging.PageLayout.PageSizeBytes;
        long moved = 0, toMove = -1;
        var transactions = 0;
        while (true)
        {
            cancellationToken.ThrowIfCancellationRequested();
            using var tx = BeginWrite();
            var (ceiling, pagesToMove) = tx.PlanCompaction();
            if (toMove < 0) toMove = pagesToMove;
            if (pagesToMove == 0) break;
            var count = tx.RelocateAbove(ceiling, CompactionPagesPerTransaction);
            // Nothing could move (no free run low enough for what is left): done; disposing rolls nothing back.
            if (count == 0) break;
            tx.Commit();
            moved += count;
            transactions++;
            progress?.Report(new CompactionProgress(moved, Math.Max(toMove, moved), transactions));
        }
        _flusher.Space.ScanAllNextTime();
        Checkpoint();
        return new CompactionResult(moved, transactions, before, DataFile.PageCount * Paging.PageLayout.PageSizeBytes, Stopwatch.GetElapsedTime(started));
    }
}
