using System.Diagnostics;

namespace Storage.Transactions;

/// <summary>
/// The single writer's lock, and when, where and in which flow of execution the write transaction holding it began (for the message of a writer that
/// waited too long). Released once a commit's entry is appended, before its durable write.
/// </summary>
internal sealed class WriterLock
{
    private readonly SemaphoreSlim _semaphore = new(1, 1);
    private long _beganTimestamp;
    private StackTrace? _beganAt;
    private object? _holder;

    /// <summary>
    /// The token of the write transaction the current flow of execution began synchronously (and has not ended in this
    /// flow). A token, not the transaction: a transaction never disposed must stay collectable, so that its finalizer
    /// releases the lock.
    /// </summary>
    private static readonly AsyncLocal<object?> BegunInThisFlow = new();

    /// <summary>Takes the lock if it comes free within <paramref name="waitMs"/>.</summary>
    public bool TryEnter(int waitMs) => _semaphore.Wait(waitMs);

    /// <exception cref="StorageException"><see cref="StorageErrorCode.WriteTransactionTimeout"/>, saying how long the holder has been open and where it began.</exception>
    public void Enter(TimeSpan timeout)
    {
        if (!_semaphore.Wait(timeout)) ThrowTimeout();
    }

    public Task EnterAsync(CancellationToken cancellationToken) => _semaphore.WaitAsync(cancellationToken);

    /// <summary>Takes the lock if it comes free within <paramref name="waitMs"/>, without blocking a thread meanwhile.</summary>
    public Task<bool> TryEnterAsync(int waitMs) => _semaphore.WaitAsync(waitMs);

    /// <summary>The holder is a write transaction that began at <paramref name="timestamp"/> (stopwatch ticks), at <paramref name="beganAt"/> when stacks are tracked.</summary>
    /// <param name="timestamp">When it began.</param>
    /// <param name="beganAt">Where, when stacks are tracked.</param>
    /// <param name="inCallingFlow">Begun synchronously in the calling flow of execution (it is recorded there: a dispose in the same flow while it is open is a transaction forgotten).</param>
    public void Began(long timestamp, StackTrace? beganAt, bool inCallingFlow)
    {
        if (inCallingFlow)
        {
            var holder = new object();
            Volatile.Write(ref _holder, holder);
            BegunInThisFlow.Value = holder;
        }
        Volatile.Write(ref _beganAt, beganAt);
        Volatile.Write(ref _beganTimestamp, timestamp);
    }

    /// <summary>The write transaction ended or appended its commit: the next one may begin.</summary>
    public void Release()
    {
        Volatile.Write(ref _beganTimestamp, 0);
        Volatile.Write(ref _beganAt, null);
        var holder = Interlocked.Exchange(ref _holder, null);
        if (holder is not null && ReferenceEquals(BegunInThisFlow.Value, holder)) BegunInThisFlow.Value = null;
        _semaphore.Release();
    }

    /// <summary>
    /// Whether the lock is held by a write transaction that the calling flow of execution began synchronously and has
    /// not ended: it cannot end while this flow waits for it. (A transaction begun on the same thread by another flow,
    /// one that awaited since, is not this flow's.)
    /// </summary>
    public bool HeldByCallingFlow => Volatile.Read(ref _holder) is { } holder && ReferenceEquals(BegunInThisFlow.Value, holder);

    /// <summary>How long the holder has been open and where it began, as the end of a sentence (empty when the lock is free).</summary>
    public string DescribeHolder()
    {
        var began = Volatile.Read(ref _beganTimestamp);
        var beganAt = Volatile.Read(ref _beganAt);
        return began == 0 ? "" : $" (open for {Stopwatch.GetElapsedTime(began).TotalSeconds:N1} s).{TransactionOrigin.Describe(beganAt)}";
    }

    private void ThrowTimeout()
    {
        var holder = DescribeHolder();
        throw new StorageException(StorageErrorCode.WriteTransactionTimeout, $"Another write transaction is still running{(holder.Length == 0 ? "." : holder)}");
    }
}
