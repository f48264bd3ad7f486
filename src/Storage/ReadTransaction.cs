using Storage.Transactions;

namespace Storage;

/// <summary>
/// A read-only snapshot: sees exactly what was committed when it began, whatever commits follow.
/// Never blocks the writer and is never blocked by it. Any number may be open, on any threads.
/// </summary>
/// <remarks>
/// While it is open, every page version it sees stays in scratch memory and the flusher writes nothing newer to the
/// data file (see <see cref="MemoryUse.PinnedBytes"/>): end readers promptly. An environment warns about old
/// readers (<see cref="StorageOptions.OnReaderWarning"/>) and can act at a limit (<see cref="StorageOptions.ReaderLimitPolicy"/>).
/// When <see cref="ReaderLimitPolicy.EndOldestReader"/> ends this transaction, everything it returned stays valid until
/// its next call into the API (on it, or on a tree, cursor or range of it); that call throws <see cref="StorageException"/>
/// with <see cref="StorageErrorCode.SnapshotTooOld"/> and releases the snapshot, and spans from earlier calls must not be
/// used after it.
/// </remarks>
public sealed class ReadTransaction : Transaction
{
    internal ReadTransaction(StorageEnvironment environment, PageTransaction pages, long beganTimestamp, System.Diagnostics.StackTrace? beganAt)
        : base(environment, pages, beganTimestamp, beganAt)
    {
    }

    /// <inheritdoc />
    public override long TransactionId => Pages.State.TransactionId;

    private protected override void End()
    {
        Pages.Release();
        Environment.ReleaseTransaction(this);
    }
}
