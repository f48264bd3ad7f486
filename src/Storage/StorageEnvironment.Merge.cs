namespace Storage;

public sealed partial class StorageEnvironment
{
    /// <summary>At most this many operations are merged into one transaction.</summary>
    private const int MaxMergedOperations = 1024;

    private readonly object _mergeLock = new();
    private readonly List<MergedWrite> _mergeQueue = [];
    private bool _merging;

    /// <summary>
    /// Runs <paramref name="operation"/> in a write transaction merged with other callers' operations: the operations
    /// waiting when a merged transaction begins run in it, in the order they were submitted, and it commits once, in
    /// one durable write. The task completes, with that commit's stats, when the commit is durable.
    /// </summary>
    /// <remarks>
    /// <para>
    /// For many small independent writers (one put each, say), merging costs one transaction and one journal write
    /// per batch instead of per caller. An operation must only use the transaction it is given (not commit or dispose
    /// it), and must be safe to run more than once: when one operation throws, the merged transaction is rolled back
    /// and the others run again without it. The exception goes to that operation's caller only.
    /// </para>
    /// <para>
    /// <paramref name="cancellationToken"/> is observed until the operation runs; cancelled before, it is skipped and
    /// the task is cancelled. Once it has run, its commit can no longer be cancelled.
    /// </para>
    /// </remarks>
    public Task<CommitStats> WriteAsync(Action<WriteTransaction> operation, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(operation);
        EnsureWritable();
        if (cancellationToken.IsCancellationRequested) return Task.FromCanceled<CommitStats>(cancellationToken);
        var write = new MergedWrite(operation, cancellationToken);
        lock (_mergeLock)
        {
            _mergeQueue.Add(write);
            if (!_merging)
            {
                _merging = true;
                ThreadPool.UnsafeQueueUserWorkItem(static env => env.RunMerges(), this, preferLocal: false);
            }
        }
        return write.Completion.Task;
    }

    /// <summary>As <see cref="WriteAsync"/>, blocking the calling thread until the merged commit is durable.</summary>
    public CommitStats Write(Action<WriteTransaction> operation) => WriteAsync(operation).GetAwaiter().GetResult();

    /// <summary>
    /// The merger, on a thread-pool thread while operations wait: one merged transaction after another. Each is handed
    /// to the journal and the next begins while the disk writes it (group commit); its callers are told when durable.
    /// </summary>
    private void RunMerges()
    {
        var batch = new List<MergedWrite>();
        while (true)
        {
            lock (_mergeLock)
            {
                if (_mergeQueue.Count == 0)
                {
                    _merging = false;
                    return;
                }
                var take = Math.Min(_mergeQueue.Count, MaxMergedOperations);
                batch.AddRange(_mergeQueue.GetRange(0, take));
                _mergeQueue.RemoveRange(0, take);
            }
            try
            {
                RunMerged(batch);
            }
            catch (Exception e)
            {
                // Beginning or committing the merged transaction failed: every operation still in it fails with that.
                foreach (var write in batch) write.Completion.TrySetException(e);
            }
            batch = [];
        }
    }

    private void RunMerged(List<MergedWrite> batch)
    {
        while (true)
        {
            batch.RemoveAll(static write =>
            {
                if (!write.CancellationToken.IsCancellationRequested) return false;
                write.Completion.TrySetCanceled(write.CancellationToken);
                return true;
            });
            if (batch.Count == 0) return;
            var tx = BeginWrite();
            var failed = -1;
            try
            {
                for (var i = 0; i < batch.Count && failed < 0; i++)
                {
                    try
                    {
                        batch[i].Operation(tx);
                        tx.EnsureUsable();
                    }
                    catch (Exception e)
                    {
                        batch[i].Completion.TrySetException(e);
                        failed = i;
                    }
                }
                if (failed >= 0)
                {
                    // Roll back what the others did and run them again without the one that failed.
                    tx.Dispose();
                    batch.RemoveAt(failed);
                    continue;
                }
                var commit = tx.CommitAsync(CommitDurability.Durable, CancellationToken.None);
                var merged = batch.ToArray();
                if (commit.IsCompletedSuccessfully)
                {
                    Complete(merged, commit.Result);
                }
                else
                {
                    _ = CompleteWhenDurable(commit, merged);
                }
                return;
            }
            finally
            {
                tx.Dispose();
            }
        }
    }

    private static void Complete(MergedWrite[] merged, CommitStats stats)
    {
        foreach (var write in merged) write.Completion.TrySetResult(stats);
    }

    private static async Task CompleteWhenDurable(ValueTask<CommitStats> commit, MergedWrite[] merged)
    {
        try
        {
            Complete(merged, await commit.ConfigureAwait(false));
        }
        catch (Exception e)
        {
            foreach (var write in merged) write.Completion.TrySetException(e);
        }
    }

    private sealed class MergedWrite(Action<WriteTransaction> operation, CancellationToken cancellationToken)
    {
        public Action<WriteTransaction> Operation { get; } = operation;

        public CancellationToken CancellationToken { get; } = cancellationToken;

        public TaskCompletionSource<CommitStats> Completion { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}
