namespace Storage;

public sealed partial class StorageEnvironment
{
    /// <summary>How long <see cref="Dispose"/> waits for a write transaction still open (or a merged write still running).</summary>
    internal const int DisposeWriterWaitMs = 10_000;

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
    /// Flushes and syncs everything committed. Open read transactions keep their snapshot readable until
    /// they are disposed; the directory is released when the last of them is. A write transaction still open after
    /// <see cref="DisposeWriterWaitMs"/> is left to the journal: everything committed is durable there.
    /// </summary>
    public void Dispose()
    {
        if (_disposed) return;
        // A group's root closes its branches first: they write into its journal folder.
        Interlocked.Exchange(ref _beforeClose, null)?.Invoke();
        _disposed = true;
        _merger.Stop();
        var haveWriteLock = _writerLock.TryEnter(DisposeWriterWaitMs);
        _flusher.Stop();
        if (haveWriteLock && !IsPoisoned) _flusher.CloseCleanly();
        Journal.Dispose();
        Interlocked.Exchange(ref _closed, null)?.Invoke();
        _flusher.Dispose();
        _metrics.Dispose();
        ReleaseLifetimeReference();
    }

    /// <summary>Test seam: stops as a killed process would, without flushing, syncing or closing cleanly.</summary>
    internal void SimulateCrash()
    {
        if (_disposed) return;
        _disposed = true;
        _merger.Stop();
        _flusher.Stop();
        Journal.Dispose();
        Interlocked.Exchange(ref _closed, null)?.Invoke();
        _flusher.Dispose();
        _metrics.Dispose();
        // A killed process holds no lock: the directory is free at once (the test must not use old transactions).
        _lockHandle.Dispose();
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
    }
}
