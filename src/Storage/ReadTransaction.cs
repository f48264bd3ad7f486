using Storage.Transactions;

namespace Storage;

/// <summary>
/// A read-only snapshot: sees exactly what was committed when it began, whatever commits follow.
/// Never blocks the writer and is never blocked by it. Any number may be open, on any threads.
/// </summary>
public sealed class ReadTransaction : Transaction
{
    internal ReadTransaction(StorageEnvironment environment, PageTransaction pages)
        : base(environment, pages)
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
