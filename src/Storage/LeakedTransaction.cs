namespace Storage;

/// <summary>
/// A transaction that was collected by the garbage collector without being disposed
/// (<see cref="StorageOptions.OnTransactionLeaked"/>). Its snapshot, maps and (for a write transaction) the write
/// lock and uncommitted changes were released when it was found.
/// </summary>
public readonly record struct LeakedTransaction
{
    /// <summary>Whether it was the write transaction (which held the write lock until it was found).</summary>
    public bool IsWrite { get; init; }

    /// <summary>Its transaction id (the snapshot of a read transaction; the id a write transaction was building).</summary>
    public long TransactionId { get; init; }

    /// <summary>How long it was open before it was found.</summary>
    public TimeSpan Age { get; init; }

    /// <summary>Where it was begun (a stack trace) when <see cref="StorageOptions.TrackTransactionStacks"/> is on; otherwise null.</summary>
    public string? BeganAt { get; init; }
}
