using System.Diagnostics;

namespace Storage.Transactions;

/// <summary>
/// The single writer's lock, and when and where the write transaction holding it began (for the message of a writer that
/// waited too long). Released once a commit's entry is appended, before its durable write.
/// </summary>
internal sealed class WriterLock
{
    private readonly SemaphoreSlim _semaphore = new(1, 1);
    private long _beganTimestamp;
    private StackTrace? _beganAt;

    /// <summary>Takes the lock if it comes free within <paramref name="waitMs"/>.</summary>
    public bool TryEnter(int waitMs) => _semaphore.Wait(waitMs);

    /// <exception cref="StorageException"><see cref="StorageErrorCode.WriteTransactionTimeout"/>, saying how long the holder has been open and where it began.</exception>
    public void Enter(TimeSpan timeout)
    {
        if (!_semaphore.Wait(timeout)) ThrowTimeout();
    }

    public Task EnterAsync(CancellationToken cancellationToken) => _semaphore.WaitAsync(cancellationToken);

    /// <summary>The holder is a write transaction that began at <paramref name="timestamp"/> (stopwatch ticks), at <paramref name="beganAt"/> when stacks are tracked.</summary>
    public void Began(long timestamp, StackTrace? beganAt)
    {
        Volatile.Write(ref _beganAt, beganAt);
        Volatile.Write(ref _beganTimestamp, timestamp);
    }

    /// <summary>The write transaction ended or appended its commit: the next one may begin.</summary>
    public void Release()
    {
        Volatile.Write(ref _beganTimestamp, 0);
        Volatile.Write(ref _beganAt, null);
        _semaphore.Release();
    }

    private void ThrowTimeout()
    {
        var began = Volatile.Read(ref _beganTimestamp);
        var beganAt = Volatile.Read(ref _beganAt);
        var age = began == 0 ? "" : $" (open for {Stopwatch.GetElapsedTime(began).TotalSeconds:N1} s)";
        throw new StorageException(StorageErrorCode.WriteTransactionTimeout, $"Another write transaction is still running{age}.{TransactionOrigin.Describe(beganAt)}");
    }
}
