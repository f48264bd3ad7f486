namespace Storage;

/// <summary>Why a storage operation failed; carried by <see cref="StorageException"/>.</summary>
public enum StorageErrorCode
{
    /// <summary>An I/O call failed; the exception carries the OS error and the path.</summary>
    IoFailure = 1,

    /// <summary>A file of the environment is damaged (see <see cref="StorageCorruptedException"/>).</summary>
    Corrupted,

    /// <summary>The disk (or a size limit) is full (see <see cref="StorageFullException"/>).</summary>
    DiskFull,

    /// <summary>The environment was disposed.</summary>
    EnvironmentClosed,

    /// <summary>An earlier failure (a failed fsync or journal write) stopped the environment accepting writes; reopen it to recover.</summary>
    EnvironmentPoisoned,

    /// <summary>Another process (or another instance in this process) has the environment open.</summary>
    EnvironmentLocked,

    /// <summary>A write transaction could not be started within the timeout.</summary>
    WriteTransactionTimeout,

    /// <summary>The transaction was committed, rolled back, disposed, or failed earlier and cannot be used.</summary>
    TransactionNotUsable,

    /// <summary>The named tree does not exist.</summary>
    TreeNotFound,

    /// <summary>A tree with that name exists already.</summary>
    TreeExists,

    /// <summary>The files were written by an incompatible format version or page size.</summary>
    FormatMismatch,

    /// <summary>One transaction changed more than 2 GiB of pages (values near the 2 GiB limit need a transaction each); nothing was written.</summary>
    TransactionTooLarge,

    /// <summary>The native platform layer was asked for (<see cref="IoBackend.Native"/>) but cannot be loaded or started here.</summary>
    PlatformUnavailable,

    /// <summary>
    /// The path is not an environment directory, or something else stands where the environment's files belong
    /// (a directory named like the data file, a file named like the journal folder); nothing was changed.
    /// </summary>
    NotAnEnvironment,

    /// <summary>
    /// The commit was refused because an old read transaction passed a reader limit and the policy is
    /// <see cref="ReaderLimitPolicy.FailCommits"/>; nothing was written. End the reader (the message says which) and retry.
    /// </summary>
    ReaderLimitExceeded,

    /// <summary>
    /// The read transaction was ended because it passed a reader limit and the policy is
    /// <see cref="ReaderLimitPolicy.EndOldestReader"/>; its snapshot is released. Begin a new one.
    /// </summary>
    SnapshotTooOld,

    /// <summary>
    /// <see cref="StorageEnvironment.Dispose"/> found a write transaction still open: begun by the disposing code itself (the
    /// environment was left open, nothing changed: end the transaction and dispose again), or on another thread that did
    /// not end it within the wait (the environment was closed without it; nothing it wrote is kept). The message says how
    /// long it has been open and where it was begun.
    /// </summary>
    TransactionStillOpen,

    /// <summary>
    /// An incremental backup cannot be taken: the journal no longer holds an entry after its base (the files were
    /// retired before the backup read them). Take a full backup, or keep more journal
    /// (<see cref="StorageOptions.RetainedJournalBytes"/>).
    /// </summary>
    BackupChainBroken,

    /// <summary>
    /// The commit was refused because the continuous archive is further behind than
    /// <see cref="StorageOptions.ArchiveMaxLagTransactions"/> allows; nothing was written. <see cref="EnvironmentStats.Archive"/>
    /// says how far behind it is and why.
    /// </summary>
    ArchiveBehind,
}
