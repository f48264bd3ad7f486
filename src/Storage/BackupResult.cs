namespace Storage;

/// <summary>What a full backup wrote (<see cref="StorageEnvironment.BackupAsync(Stream, IProgress{BackupProgress}, CancellationToken)"/>).</summary>
/// <param name="TransactionId">The committed transaction the backup is of: a restore gives exactly this state.</param>
/// <param name="Pages">Pages written (every page in use at that transaction but the file headers).</param>
/// <param name="Bytes">Bytes of the backup stream.</param>
/// <param name="Duration">How long it took.</param>
/// <param name="Path">The backup file, when written to a directory; else null.</param>
public sealed record BackupResult(long TransactionId, long Pages, long Bytes, TimeSpan Duration, string? Path)
{
    /// <summary>For an incremental backup, the transaction it starts after (its base); null for a full one.</summary>
    public long? BaseTransactionId { get; init; }

    /// <summary>For an incremental backup, the transactions it carries (<see cref="TransactionId"/> − <see cref="BaseTransactionId"/>); 0 for a full one.</summary>
    public long Transactions => BaseTransactionId is { } baseTransaction ? TransactionId - baseTransaction : 0;
}

/// <summary>How far a backup is.</summary>
/// <param name="PagesWritten">Pages written so far.</param>
/// <param name="PagesTotal">Pages the backup writes in all.</param>
/// <param name="BytesWritten">Bytes of the stream written so far.</param>
public readonly record struct BackupProgress(long PagesWritten, long PagesTotal, long BytesWritten);

/// <summary>What a restore made (<see cref="StorageEnvironment.RestoreAsync(Stream, string, IProgress{RestoreProgress}, CancellationToken)"/>).</summary>
/// <param name="Directory">The new environment's directory.</param>
/// <param name="TransactionId">The transaction it holds, the backup's.</param>
/// <param name="Pages">Pages restored.</param>
/// <param name="Bytes">Bytes of the backup stream read.</param>
/// <param name="Duration">How long it took, the check of the result included.</param>
public sealed record RestoreResult(string Directory, long TransactionId, long Pages, long Bytes, TimeSpan Duration);

/// <summary>How far a restore is.</summary>
/// <param name="PagesRestored">Pages written so far.</param>
/// <param name="BytesRead">Bytes of the backup stream read so far.</param>
public readonly record struct RestoreProgress(long PagesRestored, long BytesRead);

/// <summary>What a backup holds, read and checked whole without restoring it (<see cref="StorageEnvironment.VerifyBackupAsync(string, CancellationToken)"/>).</summary>
/// <param name="EnvironmentId">The environment it was taken of.</param>
/// <param name="TransactionId">The committed transaction it is of.</param>
/// <param name="TakenAtUtc">When the backup began.</param>
/// <param name="NextPageNumber">Pages the environment had allocated at that transaction (a restored data file's size is at least this many pages).</param>
/// <param name="Pages">Pages it carries.</param>
/// <param name="Bytes">Bytes of the stream.</param>
/// <param name="DataFormatVersion">The data file format of the pages.</param>
public sealed record BackupDescription(ulong EnvironmentId, long TransactionId, DateTime TakenAtUtc, long NextPageNumber, long Pages, long Bytes, int DataFormatVersion)
{
    /// <summary>Whether it is an incremental backup (journal entries after <see cref="BaseTransactionId"/>); then <see cref="Pages"/> counts its transactions.</summary>
    public bool IsIncremental { get; init; }

    /// <summary>For an incremental backup, the transaction it starts after; null for a full one.</summary>
    public long? BaseTransactionId { get; init; }
}
