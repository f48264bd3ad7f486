namespace Storage.Commit;

/// <summary>
/// The merged writes of <see cref="StorageEnvironment.WriteAsync(Action{WriteTransaction}, CancellationToken)"/> and <see cref="StorageEnvironment.Write"/>: callers'
/// operations queue here, and two threads of the environment's own, started at the first merged write, do the work: one
/// runs the operations waiting in one write transaction and hands it to the journal while it begins the next; the other
/// waits for their durable writes and tells the callers. Neither depends on the thread pool.
/// </summary>
internal sealed class WriteMerger(StorageEnvironment environment)
{
    /// <summary>At most this many operations are merged into one transaction.</summary>
    private const int MaxMergedOperations = 1024;

    private readonly object _mergeLock = new();
    private readonly Queue<MergedWrite> _mergeQueue = new();
    private readonly Queue<(PendingCommit Commit, MergedWrite[] Writes)> _mergedWaiting = new();
    private Thread? _merger;
    private bool _mergeStopping;

    /// <summary>Queues <paramref name="operation"/>; the task completes when its merged commit is durable.</summary>
    public Task<CommitStats> WriteAsync(Action<WriteTransaction> operation, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested) return Task.FromCanceled<CommitStats>(cancellationToken);
        var write = new MergedWrite(operation, cancellationToken, blocking: false);
        Submit(write);
        return write.Completion!.Task;
    }

    /// <summary>Queues <paramref name="operation"/> and blocks until its merged commit is durable.</summary>
    public CommitStats Write(Action<WriteTransaction> operation)
    {
        // The merger runs the operations: one that waits for another would wait for itself.
        if (ReferenceEquals(Thread.CurrentThread, _merger))
            throw new InvalidOperationException("Write cannot be called from inside a merged write's operation: it would wait for itself. Make the change in the transaction the operation was given.");
        var write = new MergedWrite(operation, CancellationToken.None, blocking: true);
        Submit(write);
        write.Done!.Wait();
        if (write.Failure is { } failure) System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw(failure);
        return write.Stats;
    }

    private void Submit(MergedWrite write)
    {
        lock (_mergeLock)
        {
            if (_mergeStopping) throw new StorageException(StorageErrorCode.EnvironmentClosed, "The environment was disposed.");
            _mergeQueue.Enqueue(write);
            if (_merger is null)
            {
                _merger = new Thread(RunMerges) { IsBackground = true, Name = "storage-merger" };
                _merger.Start();
                new Thread(CompleteMerges) { IsBackground = true, Name = "storage-merge-completer" }.Start();
            }
            Monitor.PulseAll(_mergeLock);
        }
    }

    /// <summary>The merger: one merged transaction after another, each handed to the journal while the next begins.</summary>
    private void RunMerges()
    {
        var batch = new List<MergedWrite>();
        while (true)
        {
            lock (_mergeLock)
            {
                while (_mergeQueue.Count == 0 && !_mergeStopping) Monitor.Wait(_mergeLock);
                if (_mergeStopping)
                {
                    while (_mergeQueue.TryDequeue(out var left)) left.Fail(Closed());
                    return;
                }
                while (batch.Count < MaxMergedOperations && _mergeQueue.TryDequeue(out var next)) batch.Add(next);
            }
            try
            {
                RunMerged(batch);
            }
            catch (Exception e)
            {
                // Beginning or committing the merged transaction failed: every operation still in it fails with that.
                foreach (var write in batch) write.Fail(e);
            }
            batch.Clear();
        }
    }

    private void RunMerged(List<MergedWrite> batch)
    {
        while (true)
        {
            batch.RemoveAll(static write =>
            {
                if (!write.CancellationToken.IsCancellationRequested) return false;
                write.Cancel();
                return true;
            });
            if (batch.Count == 0) return;
            using var tx = environment.BeginWrite();
            var failed = -1;
            for (var i = 0; i < batch.Count && failed < 0; i++)
            {
                try
                {
                    batch[i].Operation(tx);
                    tx.EnsureUsable();
                }
                catch (Exception e)
                {
                    batch[i].Fail(e);
                    failed = i;
                }
            }
            if (failed >= 0)
            {
                // Roll back what the others did (disposing below) and run them again without the one that failed.
                batch.RemoveAt(failed);
                continue;
            }
            var pending = tx.Append(CommitDurability.Durable);
            lock (_mergeLock)
            {
                _mergedWaiting.Enqueue((pending, batch.ToArray()));
                Monitor.PulseAll(_mergeLock);
            }
            return;
        }
    }

    /// <summary>The completer: waits for each merged transaction's durable write, in order, and tells its callers.</summary>
    private void CompleteMerges()
    {
        while (true)
        {
            (PendingCommit Commit, MergedWrite[] Writes) merged;
            lock (_mergeLock)
            {
                while (_mergedWaiting.Count == 0 && !(_mergeStopping && _merger is null)) Monitor.Wait(_mergeLock);
                if (!_mergedWaiting.TryDequeue(out merged)) return;
            }
            CommitStats stats;
            try
            {
                stats = environment.Commits.Complete(merged.Commit);
            }
            catch (Exception e)
            {
                foreach (var write in merged.Writes) write.Fail(e);
                continue;
            }
            foreach (var write in merged.Writes) write.Complete(stats);
        }
    }

    /// <summary>At dispose: the merger fails what is still queued and stops; the completer stops once the commits it waits for are settled.</summary>
    public void Stop()
    {
        lock (_mergeLock)
        {
            if (_merger is null) return;
            _mergeStopping = true;
            Monitor.PulseAll(_mergeLock);
        }
        // The merger may be inside a merged transaction; it finishes that one (dispose waits for the write lock) and stops.
        _merger.Join(TimeSpan.FromMilliseconds(StorageEnvironment.DisposeWriterWaitMs));
        lock (_mergeLock)
        {
            _merger = null;
            Monitor.PulseAll(_mergeLock);
        }
    }

    private static StorageException Closed() => new(StorageErrorCode.EnvironmentClosed, "The environment was disposed before the operation ran.");

}
