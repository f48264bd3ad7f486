namespace Storage.Commit;

/// <summary>One caller's operation waiting to run in a merged write transaction, and how its caller learns the outcome.</summary>
internal sealed class MergedWrite(Action<WriteTransaction> operation, CancellationToken cancellationToken, bool blocking)
{
    public Action<WriteTransaction> Operation { get; } = operation;

    public CancellationToken CancellationToken { get; } = cancellationToken;

    /// <summary>An asynchronous caller's.</summary>
    public TaskCompletionSource<CommitStats>? Completion { get; } = blocking ? null : new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>A blocked caller's, set once the outcome below is in.</summary>
    public ManualResetEventSlim? Done { get; } = blocking ? new(false) : null;

    public CommitStats Stats { get; private set; }

    public Exception? Failure { get; private set; }

    private int _settled;

    public void Complete(CommitStats stats)
    {
        if (Interlocked.Exchange(ref _settled, 1) != 0) return;
        Stats = stats;
        Completion?.SetResult(stats);
        Done?.Set();
    }

    public void Fail(Exception failure)
    {
        if (Interlocked.Exchange(ref _settled, 1) != 0) return;
        Failure = failure;
        Completion?.SetException(failure);
        Done?.Set();
    }

    public void Cancel()
    {
        if (Interlocked.Exchange(ref _settled, 1) != 0) return;
        Failure = new OperationCanceledException(CancellationToken);
        Completion?.SetCanceled(CancellationToken);
        Done?.Set();
    }
}
