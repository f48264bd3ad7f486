namespace Storage;

/// <summary>
/// What an environment does when its oldest read transaction passes <see cref="StorageOptions.ReaderLimitAge"/> or
/// open snapshots pin more than <see cref="StorageOptions.ReaderLimitPinnedBytes"/> of scratch
/// (<see cref="StorageOptions.ReaderLimitPolicy"/>).
/// </summary>
public enum ReaderLimitPolicy
{
    /// <summary>Nothing beyond the warning: readers keep their snapshots for as long as they are open.</summary>
    None = 0,

    /// <summary>
    /// <see cref="WriteTransaction.Commit()"/> fails with <see cref="StorageErrorCode.ReaderLimitExceeded"/> (nothing is
    /// written) until the reader ends or falls back under the limit. Readers are never disturbed.
    /// </summary>
    FailCommits,

    /// <summary>
    /// The oldest read transaction is ended: its next call (on any of its trees, cursors or ranges) throws
    /// <see cref="StorageException"/> with <see cref="StorageErrorCode.SnapshotTooOld"/> and releases its snapshot.
    /// Until that call its snapshot stays pinned, so what it already holds stays valid; a reader that never calls
    /// again keeps its snapshot until it is disposed or collected.
    /// </summary>
    EndOldestReader,
}
