namespace Storage;

/// <summary>
/// The oldest read transaction passed a warning threshold or a limit (<see cref="StorageOptions.OnReaderWarning"/>).
/// An open snapshot keeps every page version it sees in scratch and keeps the flusher from writing anything newer
/// to the data file (so journal files cannot be retired either).
/// </summary>
public readonly record struct ReaderWarning
{
    /// <summary>The snapshot (transaction id) the oldest reader reads.</summary>
    public long TransactionId { get; init; }

    /// <summary>How long ago the oldest reader began.</summary>
    public TimeSpan Age { get; init; }

    /// <summary>Scratch bytes open snapshots pin (see <see cref="MemoryUse.PinnedBytes"/>).</summary>
    public long PinnedBytes { get; init; }

    /// <summary>
    /// False for the warning (<see cref="StorageOptions.ReaderWarningAge"/>, <see cref="StorageOptions.ReaderWarningPinnedBytes"/>);
    /// true when a limit was passed and <see cref="Policy"/> applied.
    /// </summary>
    public bool LimitReached { get; init; }

    /// <summary>The policy applied at the limit (<see cref="ReaderLimitPolicy.None"/> for a warning).</summary>
    public ReaderLimitPolicy Policy { get; init; }

    /// <summary>Where the reader was begun (a stack trace) when <see cref="StorageOptions.TrackTransactionStacks"/> is on; otherwise null.</summary>
    public string? BeganAt { get; init; }
}
