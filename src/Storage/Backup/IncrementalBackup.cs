using System.Diagnostics;
using Storage.Journal;
using Storage.State;

namespace Storage.Backup;

/// <summary>
/// An incremental backup: the journal entries of every transaction after a base (a full backup's transaction, or the
/// end of the previous incremental) up to the last durable one, copied as the journal stored them, from the kept files
/// (<see cref="RetainedJournals"/>) and the journal in use.
/// </summary>
internal static class IncrementalBackup
{
    public static async Task<BackupResult> WriteAsync(StorageEnvironment environment, Func<ReadOnlyMemory<byte>, CancellationToken, ValueTask> write, long afterTransactionId,
        string? path, IProgress<BackupProgress>? progress, CancellationToken cancellationToken)
    {
        var started = Stopwatch.GetTimestamp();
        var upTo = environment.Journal.DurableTransactionId;
        if (afterTransactionId < 0 || afterTransactionId > upTo)
        {
            throw new ArgumentOutOfRangeException(nameof(afterTransactionId), afterTransactionId, $"The base must be a transaction of this environment, at most the last durable one ({upTo}).");
        }
        var header = new byte[BackupFormat.HeaderBytes];
        BackupFormat.WriteHeader(header, new BackupFormat.Header(environment.EnvironmentId, upTo, 0, default, FileHeader.CurrentFormatVersion, DateTime.UtcNow,
            BackupFormat.KindIncremental, afterTransactionId));
        await write(header, cancellationToken).ConfigureAwait(false);
        long bytes = BackupFormat.HeaderBytes, blocks = 0;
        var blockCrcs = Platform.Crc32C.Start(0);
        var expected = afterTransactionId + 1;
        byte[] buffer = [];
        // A file retired meanwhile moves from the journal folder to the kept ones: a pass that finds a file in neither
        // place goes on with the next, and another pass over a fresh listing picks up where it stopped.
        for (var pass = 0; pass < 3 && expected <= upTo; pass++)
        {
            foreach (var (number, journalPath, retainedPath) in Files(environment))
            {
                if (expected > upTo) break;
                using var reader = Open(number, journalPath, retainedPath);
                if (reader is null) continue;
                long offset = JournalFileHeader.BlockBytes;
                while (expected <= upTo && reader.TryReadStored(offset, environment.EnvironmentId, out var entry, out var stored, out var size))
                {
                    offset += size;
                    if (entry.TransactionId < expected) continue; // an older entry: of an earlier use of a recycled file, or of an earlier pass
                    if (entry.TransactionId > expected) break;
                    var length = BackupFormat.BlockHeaderBytes + stored.Length;
                    if (buffer.Length < length) buffer = new byte[Math.Max(length, buffer.Length * 2)];
                    stored.CopyTo(buffer.AsSpan(BackupFormat.BlockHeaderBytes));
                    var crc = BackupFormat.WriteBlockHeader(buffer, blocks, entry.TransactionId, stored.Length, buffer.AsSpan(BackupFormat.BlockHeaderBytes, stored.Length), BackupFormat.EntryMagic);
                    cancellationToken.ThrowIfCancellationRequested();
                    await write(buffer.AsMemory(0, length), cancellationToken).ConfigureAwait(false);
                    blockCrcs = BackupFormat.FoldBlockCrc(blockCrcs, crc);
                    blocks++;
                    bytes += length;
                    expected++;
                    progress?.Report(new BackupProgress(expected - afterTransactionId - 1, upTo - afterTransactionId, bytes));
                }
            }
        }
        if (expected <= upTo)
        {
            throw new StorageException(StorageErrorCode.BackupChainBroken,
                $"The journal no longer holds the entry of transaction {expected} of '{environment.DirectoryPath}': an incremental backup after transaction {afterTransactionId} cannot be taken. " +
                $"Take a full backup, or keep more journal (StorageOptions.{nameof(StorageOptions.RetainedJournalBytes)}, now {environment.Options.RetainedJournalBytes:N0} bytes).",
                environment.DirectoryPath, 0);
        }
        var trailer = new byte[BackupFormat.TrailerBytes];
        BackupFormat.WriteTrailer(trailer, blocks, blocks, Platform.Crc32C.Finish(blockCrcs));
        await write(trailer, cancellationToken).ConfigureAwait(false);
        bytes += BackupFormat.TrailerBytes;
        return new BackupResult(upTo, 0, bytes, Stopwatch.GetElapsedTime(started), path) { BaseTransactionId = afterTransactionId };
    }

    /// <summary>
    /// The journal files in number order, kept ones and ones in use: for each, its path in the journal folder and in the
    /// folder of kept files (a file may move from the first to the second while it is listed or read).
    /// </summary>
    private static IEnumerable<(long Number, string JournalPath, string RetainedPath)> Files(StorageEnvironment environment)
    {
        var journals = Path.Combine(environment.DirectoryPath, StorageEnvironmentNames.JournalDirectory);
        var retained = Path.Combine(environment.DirectoryPath, RetainedJournals.DirectoryName);
        // The journal folder first: a file moved to the kept ones after this listing is found there by its number.
        var numbers = JournalEntryReader.ListFiles(journals).Select(f => f.Number).Concat(RetainedJournals.List(environment.DirectoryPath).Select(f => f.Number));
        foreach (var number in numbers.Distinct().Order())
        {
            var name = JournalFile.FileName(number);
            yield return (number, Path.Combine(journals, name), Path.Combine(retained, name));
        }
    }

    /// <summary>Opens the file where it is now: kept, or still in the journal folder (tried again in that order, as it may move between the two looks).</summary>
    private static JournalEntryReader? Open(long number, string journalPath, string retainedPath)
    {
        for (var attempt = 0; attempt < 2; attempt++)
        {
            foreach (var path in new[] { retainedPath, journalPath })
            {
                try
                {
                    if (File.Exists(path)) return new JournalEntryReader(path, number);
                }
                catch (StorageException)
                {
                    // Moved or deleted between the check and the open: the other place, or gone.
                }
            }
        }
        return null;
    }
}
