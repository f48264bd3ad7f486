using System.IO.Pipelines;
using Storage.Backup;
using Storage.Platform;

namespace Storage;

public sealed partial class StorageEnvironment
{
    /// <summary>Backup files written to a directory end with this.</summary>
    public const string BackupFileExtension = ".storage-backup";

    /// <summary>
    /// Writes a full backup of the last committed transaction to <paramref name="destination"/>, while writers go on
    /// committing and readers reading. The backup is one consistent state, the one of
    /// <see cref="BackupResult.TransactionId"/>: it is read through a read transaction (a snapshot), so it holds what
    /// that transaction saw and nothing after. Restore it with <see cref="RestoreAsync(Stream, string, IProgress{RestoreProgress}, CancellationToken)"/>.
    /// </summary>
    /// <remarks>
    /// <para>The stream is self-describing and versioned: a header (environment, transaction, format), blocks of pages
    /// each with its CRC-32C, and a trailer; a stream without its trailer (cancelled, cut short) is refused on
    /// restore. Free pages (by the snapshot's free-space bitmaps) are left out. Pages are copied as they are: the restore
    /// checks the whole result with the library's checker before it puts it in place.</para>
    /// <para>The flusher keeps running; what is committed meanwhile waits in scratch until the backup's read
    /// transaction ends (see <see cref="MemoryUse.PinnedBytes"/>), as for any long reader. Cancelling stops at the
    /// next block and leaves the environment as it was.</para>
    /// </remarks>
    /// <exception cref="StorageCorruptedException">A page could not be read.</exception>
    public Task<BackupResult> BackupAsync(Stream destination, IProgress<BackupProgress>? progress = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(destination);
        EnsureOpen();
        return EnvironmentBackup.WriteAsync(this, (buffer, token) => destination.WriteAsync(buffer, token), path: null, progress, cancellationToken);
    }

    /// <summary>
    /// Writes a full backup to <paramref name="destination"/>, as <see cref="BackupAsync(Stream, IProgress{BackupProgress}, CancellationToken)"/>
    /// does, flushing the pipe after each block. The pipe is not completed: the caller completes it.
    /// </summary>
    public Task<BackupResult> BackupAsync(PipeWriter destination, IProgress<BackupProgress>? progress = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(destination);
        EnsureOpen();
        return EnvironmentBackup.WriteAsync(this, async (buffer, token) =>
        {
            var result = await destination.WriteAsync(buffer, token).ConfigureAwait(false);
            if (result.IsCanceled) throw new OperationCanceledException("The pipe's reader cancelled the backup.", token);
            if (result.IsCompleted) throw new IOException("The pipe's reader completed before the backup was written.");
        }, path: null, progress, cancellationToken);
    }

    /// <summary>
    /// Writes a full backup into <paramref name="directory"/> (created when missing) as a file named after its
    /// transaction (<c>full-&lt;transaction&gt;</c> and <see cref="BackupFileExtension"/>). It is written under a
    /// temporary name, synced, and renamed into place only when whole, so a file of that name is always a whole backup;
    /// a cancelled or failed backup deletes its temporary file.
    /// </summary>
    public async Task<BackupResult> BackupAsync(string directory, IProgress<BackupProgress>? progress = null, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        EnsureOpen();
        return await WriteFullBackupFileAsync(directory, progress, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>The full backup file, without the check that the environment is open (the archive's last round runs while it closes).</summary>
    internal Task<BackupResult> WriteFullBackupFileAsync(string directory, IProgress<BackupProgress>? progress, CancellationToken cancellationToken) =>
        WriteBackupFileAsync(directory, (write, token) => EnvironmentBackup.WriteAsync(this, write, null, progress, token),
            result => $"full-{result.TransactionId:D20}{BackupFileExtension}", cancellationToken);

    /// <summary>The incremental backup file, without the check that the environment is open (the archive's last round runs while it closes).</summary>
    internal Task<BackupResult> WriteIncrementalBackupFileAsync(string directory, long afterTransactionId, IProgress<BackupProgress>? progress, CancellationToken cancellationToken) =>
        WriteBackupFileAsync(directory, (write, token) => IncrementalBackup.WriteAsync(this, write, afterTransactionId, null, progress, token),
            result => $"incr-{result.BaseTransactionId + 1:D20}-{result.TransactionId:D20}{BackupFileExtension}", cancellationToken);

    /// <summary>
    /// Restores a full backup (<see cref="BackupAsync(Stream, IProgress{BackupProgress}, CancellationToken)"/>) into
    /// <paramref name="targetDirectory"/>, which must be missing or empty. The environment is built in a temporary
    /// directory beside it, opened and checked by the library's checker, and only then renamed to
    /// <paramref name="targetDirectory"/>; on any failure the temporary directory is deleted and nothing is left.
    /// </summary>
    /// <exception cref="StorageCorruptedException">The stream is not a backup, or is damaged, cut short or out of order: the message and <see cref="StorageException.Path"/> say where.</exception>
    /// <exception cref="StorageException"><see cref="StorageErrorCode.NotAnEnvironment"/>: the target exists and is not empty.</exception>
    public static Task<RestoreResult> RestoreAsync(Stream source, string targetDirectory, IProgress<RestoreProgress>? progress = null, CancellationToken cancellationToken = default) =>
        EnvironmentRestore.RestoreAsync(source, "the backup stream", targetDirectory, progress, cancellationToken);

    /// <summary>Restores the backup file <paramref name="backupFile"/> into <paramref name="targetDirectory"/>, as <see cref="RestoreAsync(Stream, string, IProgress{RestoreProgress}, CancellationToken)"/> does.</summary>
    public static async Task<RestoreResult> RestoreAsync(string backupFile, string targetDirectory, IProgress<RestoreProgress>? progress = null, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(backupFile);
        await using var file = new FileStream(backupFile, FileMode.Open, FileAccess.Read, FileShare.Read, 1 << 16, FileOptions.Asynchronous | FileOptions.SequentialScan);
        return await EnvironmentRestore.RestoreAsync(file, Path.GetFullPath(backupFile), targetDirectory, progress, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// Reads the backup file <paramref name="backupFile"/> whole and checks every part of it (header, the CRC and place of
    /// every block, the trailer) without restoring it.
    /// </summary>
    /// <exception cref="StorageCorruptedException">It is not a backup, or is damaged, cut short or out of order: the message says where.</exception>
    public static async Task<BackupDescription> VerifyBackupAsync(string backupFile, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(backupFile);
        await using var file = new FileStream(backupFile, FileMode.Open, FileAccess.Read, FileShare.Read, 1 << 16, FileOptions.Asynchronous | FileOptions.SequentialScan);
        return await EnvironmentRestore.VerifyAsync(file, Path.GetFullPath(backupFile), cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Reads a backup stream whole and checks it without restoring it, as <see cref="VerifyBackupAsync(string, CancellationToken)"/> does.</summary>
    public static Task<BackupDescription> VerifyBackupAsync(Stream source, CancellationToken cancellationToken = default) =>
        EnvironmentRestore.VerifyAsync(source, "the backup stream", cancellationToken);

    /// <summary>
    /// Writes an incremental backup to <paramref name="destination"/>: the journal entries of every transaction after
    /// <paramref name="afterTransactionId"/> (the <see cref="BackupResult.TransactionId"/> of the full or incremental
    /// backup before it) up to the last durable one, as the journal stored them. A chain of a full backup and
    /// incremental ones, each after the one before, restores to the end of any link
    /// (<see cref="RestoreAsync(IReadOnlyList{string}, string, long?, IProgress{RestoreProgress}, CancellationToken, bool)"/>).
    /// </summary>
    /// <remarks>
    /// The entries are read from the journal files still in use and from those kept after their entries reached the
    /// synced data file (<see cref="StorageOptions.RetainedJournalBytes"/>). Without enough kept, an entry after the base
    /// may be gone: the backup then fails with <see cref="StorageErrorCode.BackupChainBroken"/>, and a full backup is
    /// needed. Not for a member of an environment group with shared journals.
    /// </remarks>
    /// <exception cref="StorageException"><see cref="StorageErrorCode.BackupChainBroken"/>: see the remarks.</exception>
    public Task<BackupResult> BackupIncrementalAsync(Stream destination, long afterTransactionId, IProgress<BackupProgress>? progress = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(destination);
        EnsureOpen();
        return IncrementalBackup.WriteAsync(this, (buffer, token) => destination.WriteAsync(buffer, token), afterTransactionId, path: null, progress, cancellationToken);
    }

    /// <summary>
    /// Writes an incremental backup (<see cref="BackupIncrementalAsync(Stream, long, IProgress{BackupProgress}, CancellationToken)"/>)
    /// into <paramref name="directory"/> as a file named after the transactions it carries
    /// (<c>incr-&lt;first&gt;-&lt;last&gt;</c> and <see cref="BackupFileExtension"/>), whole or not at all.
    /// </summary>
    public async Task<BackupResult> BackupIncrementalAsync(string directory, long afterTransactionId, IProgress<BackupProgress>? progress = null, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        EnsureOpen();
        return await WriteIncrementalBackupFileAsync(directory, afterTransactionId, progress, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// Restores a chain of backup files into <paramref name="targetDirectory"/>: a full backup first, then incremental
    /// ones, each starting where the one before ended; with <paramref name="upToTransactionId"/>, the state of that
    /// transaction (any one from the full backup's to the chain's last). Built beside the target, checked by the
    /// library's checker, then renamed into place; on any failure nothing is left.
    /// </summary>
    /// <param name="chain">The full backup, then the incremental ones in order.</param>
    /// <param name="targetDirectory">The new environment's directory: missing or empty.</param>
    /// <param name="upToTransactionId">The transaction to restore; null for the chain's last.</param>
    /// <param name="progress">Told how far the full backup's pages are.</param>
    /// <param name="cancellationToken">Stops the restore, leaving nothing behind.</param>
    /// <param name="compact">Compact the restored environment before putting it in place: the pages in use move to the front and the file is cut (the backup itself carries only pages in use). The moves are transactions of their own, after the state restored; a compacted restore is not continued by later incremental backups.</param>
    /// <exception cref="StorageCorruptedException">A link is damaged, cut short, out of place or missing: the message says which file and where.</exception>
    public static Task<RestoreResult> RestoreAsync(IReadOnlyList<string> chain, string targetDirectory, long? upToTransactionId = null,
        IProgress<RestoreProgress>? progress = null, CancellationToken cancellationToken = default, bool compact = false)
    {
        ArgumentNullException.ThrowIfNull(chain);
        var links = chain.Select(file => ((Func<Stream>)(() => new FileStream(file, FileMode.Open, FileAccess.Read, FileShare.Read, 1 << 16, FileOptions.Asynchronous | FileOptions.SequentialScan)),
            Path.GetFullPath(file))).ToList();
        return EnvironmentRestore.RestoreChainAsync(links, targetDirectory, upToTransactionId, progress, cancellationToken, compact: compact);
    }

    /// <summary>
    /// Writes a backup file under a temporary name, syncs it, and renames it to <paramref name="name"/>'s answer; deletes it
    /// on failure. First deletes the temporary files of backups killed before they finished (<see cref="AbandonedBackupFiles"/>).
    /// </summary>
    private static async Task<BackupResult> WriteBackupFileAsync(string directory, Func<Func<ReadOnlyMemory<byte>, CancellationToken, ValueTask>, CancellationToken, Task<BackupResult>> backup,
        Func<BackupResult, string> name, CancellationToken cancellationToken)
    {
        directory = Path.GetFullPath(directory);
        Directory.CreateDirectory(directory);
        // What backups killed before they finished left here.
        AbandonedBackupFiles.Remove(directory);
        var temporary = AbandonedBackupFiles.NewTemporaryPath(directory);
        try
        {
            BackupResult result;
            // Handed to the device in steps as it is written, so that its sync does not stall the journal's writes.
            using (var file = new PacedFileWriter(temporary))
            {
                result = await backup((buffer, token) =>
                {
                    file.Write(buffer.Span);
                    return ValueTask.CompletedTask;
                }, cancellationToken).ConfigureAwait(false);
                file.Sync();
            }
            var path = Path.Combine(directory, name(result));
            // A file of the same name holds the same transactions of the same environment: the new one replaces it, in one rename.
            File.Move(temporary, path, overwrite: true);
            FileIo.SyncDirectory(directory, faults: null);
            return result with { Path = path };
        }
        catch
        {
            File.Delete(temporary);
            throw;
        }
    }

    /// <summary>
    /// Restores the continuous archive in <paramref name="archiveDirectory"/> (<see cref="StorageOptions.ArchiveDirectory"/>)
    /// into <paramref name="targetDirectory"/>: the state of <paramref name="upToTransactionId"/>, or of the newest
    /// transaction the archive reached. The newest base at or before it and the incremental files after that base are
    /// restored as a chain (<see cref="RestoreAsync(IReadOnlyList{string}, string, long?, IProgress{RestoreProgress}, CancellationToken, bool)"/>).
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException">The archive does not reach <paramref name="upToTransactionId"/>, or has no base before it.</exception>
    public static Task<RestoreResult> RestoreFromArchiveAsync(string archiveDirectory, string targetDirectory, long? upToTransactionId = null,
        IProgress<RestoreProgress>? progress = null, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(archiveDirectory);
        return RestoreAsync(ArchiveChain(archiveDirectory, upToTransactionId), targetDirectory, upToTransactionId, progress, cancellationToken);
    }

    /// <summary>
    /// Restores the continuous archive in <paramref name="archiveDirectory"/> to a point in time: the newest transaction
    /// an archive file had reached when it was taken at or before <paramref name="upToUtc"/>. Every transaction restored
    /// was durable by then; ones committed in the last <see cref="StorageOptions.ArchiveInterval"/> before it may be in a
    /// file taken after it, and so not restored. <see cref="RestoreResult.TransactionId"/> says which transaction it is.
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException">No file of the archive was taken by then.</exception>
    public static Task<RestoreResult> RestoreFromArchiveAsync(string archiveDirectory, string targetDirectory, DateTime upToUtc,
        IProgress<RestoreProgress>? progress = null, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(archiveDirectory);
        var transaction = Archiver.TransactionAt(archiveDirectory, upToUtc);
        return RestoreAsync(ArchiveChain(archiveDirectory, transaction), targetDirectory, transaction, progress, cancellationToken);
    }

    /// <summary>The transaction a restore of the archive to <paramref name="upToUtc"/> gives (see <see cref="RestoreFromArchiveAsync(string, string, DateTime, IProgress{RestoreProgress}, CancellationToken)"/>).</summary>
    public static long ArchiveTransactionAt(string archiveDirectory, DateTime upToUtc)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(archiveDirectory);
        return Archiver.TransactionAt(archiveDirectory, upToUtc);
    }

    /// <summary>
    /// The files of the archive in <paramref name="archiveDirectory"/> that restore <paramref name="upToTransactionId"/>
    /// (or as far as its newest base's chain goes, when null), in order: the newest base at or before it and the
    /// incremental files after that base.
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException">The archive does not reach the transaction, or has no base before it.</exception>
    public static IReadOnlyList<string> ArchiveChain(string archiveDirectory, long? upToTransactionId = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(archiveDirectory);
        return Archiver.ChainFor(archiveDirectory, upToTransactionId);
    }
}
