using Storage.State;
using Storage.Transactions;

namespace Storage;

public sealed partial class StorageEnvironment
{
    /// <summary>How long <see cref="Dispose"/> waits for a write transaction running on another thread (or a merged write).</summary>
    internal const int DisposeWriterWaitMs = 10_000;

    private readonly Lock _closeLock = new();
    private Action? _beforeClose;
    private Action? _closed;

    /// <summary>Run once at the start of <see cref="Dispose"/> (a group's root closes the group's branches there).</summary>
    internal Action? BeforeClose
    {
        set => _beforeClose = value;
    }

    /// <summary>Run once after the journal is closed, by <see cref="Dispose"/> or a simulated crash (a group's root ends the shared journal there).</summary>
    internal Action? ClosedHook
    {
        set => _closed = value;
    }

    internal bool IsDisposed => _disposed;

    /// <summary>
    /// Flushes and syncs everything committed, stops the background work and releases the directory. Calling it again
    /// does nothing.
    /// </summary>
    /// <remarks>
    /// <para><b>Write transactions.</b> A write transaction begun with <see cref="BeginWrite"/> by the calling code (in
    /// the same thread, or the same async flow) and still open is a transaction forgotten: <see cref="Dispose"/> throws at once (<see cref="StorageErrorCode.TransactionStillOpen"/>,
    /// saying where it was begun when <see cref="StorageOptions.TrackTransactionStacks"/> is set) and changes nothing;
    /// end the transaction and dispose again. A write transaction (or a merged write) running on another thread is
    /// waited for, up to ten seconds, and then closed with the environment: everything committed before it is durable,
    /// and what it wrote is not kept; <see cref="Dispose"/> then throws the same code, after closing.</para>
    /// <para><b>Read transactions.</b> <see cref="Dispose"/> does not wait for them and does not end them: each keeps its
    /// snapshot readable until it is disposed, and the directory stays locked until the last one is (an open of the same
    /// directory meanwhile fails with <see cref="StorageErrorCode.EnvironmentLocked"/>, and its message says which
    /// transactions of this process hold it). New transactions fail with <see cref="StorageErrorCode.EnvironmentClosed"/>.</para>
    /// </remarks>
    /// <exception cref="StorageException"><see cref="StorageErrorCode.TransactionStillOpen"/>: see the remarks.</exception>
    public void Dispose()
    {
        if (_disposed) return;
        if (!BeginClose()) return;
        Close(_writerLock.TryEnter(DisposeWriterWaitMs));
    }

    /// <summary>
    /// Disposes as <see cref="Dispose"/> does, but waits for a write transaction running on another thread without
    /// blocking a thread. The final flush and sync then run on the calling thread (file I/O that the operating system
    /// offers only as blocking calls).
    /// </summary>
    /// <exception cref="StorageException"><see cref="StorageErrorCode.TransactionStillOpen"/>: see <see cref="Dispose"/>.</exception>
    public async ValueTask DisposeAsync()
    {
        if (_disposed) return;
        if (!BeginClose()) return;
        Close(await _writerLock.TryEnterAsync(DisposeWriterWaitMs).ConfigureAwait(false));
    }

    /// <summary>Refuses to close under a write transaction begun on this thread; closes a group's branches; stops new work. False when another thread closed it meanwhile.</summary>
    private bool BeginClose()
    {
        if (_writerLock.HeldByCallingFlow)
        {
            throw new StorageException(StorageErrorCode.TransactionStillOpen,
                $"The environment '{DirectoryPath}' cannot be disposed while a write transaction it began is still open{_writerLock.DescribeHolder()} " +
                "Commit or dispose the transaction first. The environment is still open; nothing was changed.");
        }
        // A group's root closes its branches first: they write into its journal folder.
        Interlocked.Exchange(ref _beforeClose, null)?.Invoke();
        lock (_closeLock)
        {
            if (_disposed) return false;
            _disposed = true;
        }
        _merger.Stop();
        return true;
    }

    /// <summary>Closes, with the write lock held (cleanly) or not (a writer on another thread did not end in time).</summary>
    private void Close(bool haveWriteLock)
    {
        var abandoned = haveWriteLock ? null : _writerLock.DescribeHolder();
        // The archive ships what the last commits made durable before the journal closes.
        _archiver?.Stop();
        _archiver?.Dispose();
        _journalClosed = true;
        _flusher.Stop();
        if (haveWriteLock && !IsPoisoned) _flusher.CloseCleanly();
        Journal.Dispose();
        Interlocked.Exchange(ref _closed, null)?.Invoke();
        _flusher.Dispose();
        _metrics.Dispose();
        ReleaseLifetimeReference();
        if (abandoned is not null)
        {
            throw new StorageException(StorageErrorCode.TransactionStillOpen,
                $"The environment '{DirectoryPath}' was closed without the write transaction still open on another thread after {DisposeWriterWaitMs / 1000} s{(abandoned.Length == 0 ? "." : abandoned)} " +
                "Everything committed before it is durable; nothing it wrote is kept. The directory stays locked until it is disposed.");
        }
    }

    /// <summary>
    /// Why this instance still holds its directory, as the end of a sentence that starts with the directory: not disposed,
    /// or disposed while transactions were open (how many, and the oldest's age and origin).
    /// </summary>
    internal string DescribeLockHolder()
    {
        if (!_disposed) return "is already open in this process, by an instance that has not been disposed";
        var held = new List<string>(2);
        var writer = _writerLock.DescribeHolder();
        if (writer.Length > 0) held.Add($"a write transaction{writer.TrimEnd('.')}");
        var readers = Readers.ActiveCount - (writer.Length > 0 ? 1 : 0);
        if (readers > 0)
        {
            var oldest = Readers.OldestReader();
            var age = oldest is { } o ? $"; the oldest open for {o.Age.TotalSeconds:N1} s.{TransactionOrigin.Describe(o.BeganAt)}" : "";
            held.Add($"{readers} read transaction{(readers == 1 ? "" : "s")}{age}");
        }
        var what = held.Count == 0 ? "transactions" : string.Join(", and ", held);
        return $"is still held by an instance in this process that was disposed while {what}{Environment.NewLine}The directory is released when the last of them is disposed";
    }

    /// <summary>Test seam: stops as a killed process would, without flushing, syncing or closing cleanly.</summary>
    internal void SimulateCrash()
    {
        if (_disposed) return;
        _disposed = true;
        _journalClosed = true;
        _archiver?.Abandon();
        _merger.Stop();
        _flusher.Stop();
        Journal.Dispose();
        Interlocked.Exchange(ref _closed, null)?.Invoke();
        _flusher.Dispose();
        _metrics.Dispose();
        // A killed process holds no lock: the directory is free at once (the test must not use old transactions).
        _lockHandle.Dispose();
        OpenInstances.Remove(this);
        ReleaseLifetimeReference();
    }

    private void AddLifetimeReference()
    {
        while (true)
        {
            var current = Volatile.Read(ref _lifetimeReferences);
            if (current == 0) EnsureOpen();
            if (Interlocked.CompareExchange(ref _lifetimeReferences, current + 1, current) == current) return;
        }
    }

    private void ReleaseLifetimeReference()
    {
        if (Interlocked.Decrement(ref _lifetimeReferences) != 0) return;
        // The last transaction is gone: nothing can point into scratch memory or the map any more.
        Reclaimer.ReleaseAll();
        foreach (var buffer in PageTable.AllBuffers()) buffer.Release();
        Scratch.Dispose();
        DataFile.Dispose();
        Commits.Dispose();
        _writer.Dispose();
        // Only now may another instance open the directory: until here a transaction of this one could still
        // read the data file, and a new instance's recovery would change pages under its snapshot.
        _lockHandle.Dispose();
        OpenInstances.Remove(this);
    }
}
