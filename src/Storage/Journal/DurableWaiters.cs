using System.Threading.Tasks.Sources;

namespace Storage.Journal;

/// <summary>
/// Group commit: committers whose journal entries were appended wait here until a durable write covers them. One
/// leader at a time writes every entry waiting in one durable write (each keeps its own header and checksum), while
/// the committing thread appends the next ones; when the write returns, exactly the waiters it covered are woken, and
/// if entries came meanwhile, one waiter still waiting becomes the next leader (or, when only asynchronous waiters
/// are left, a thread-pool work item does). No thread is blocked per asynchronous waiter.
/// </summary>
internal sealed class DurableWaiters
{
    /// <summary>How many writes in a row one leader makes before it hands over (its own commit waits for them).</summary>
    private const int MaxLeaderRounds = 4;

    private const int MaxPooledAsyncWaiters = 64;

    private readonly IEnvironmentJournal _journal;
    private readonly object _lock = new();
    private readonly List<Waiter> _waiting = [];
    private readonly Stack<AsyncWaiter> _asyncPool = new();
    private int _waitingCount;
    private bool _leading;

    [ThreadStatic]
    private static SyncWaiter? t_waiter;

    public DurableWaiters(IEnvironmentJournal journal) => _journal = journal;

    /// <summary>Blocks until <paramref name="transactionId"/>'s entry is durable, writing it (and every other waiting) if no one else is.</summary>
    /// <exception cref="StorageException">The write holding the entry failed (its error), an earlier one did (<see cref="StorageErrorCode.EnvironmentPoisoned"/>), or the journal was closed first.</exception>
    public void Wait(long transactionId)
    {
        var waiter = t_waiter ??= new SyncWaiter();
        while (true)
        {
            if (_journal.DurableTransactionId >= transactionId) return;
            bool lead;
            lock (_lock)
            {
                if (_journal.DurableTransactionId >= transactionId) return;
                _journal.ThrowIfFailedOrClosed(transactionId);
                // An entry already in a write under way (made by a group's writer for another member) is waited for, not written.
                lead = !_leading && !_journal.IsInWriteUnderWay(transactionId);
                if (lead)
                {
                    _leading = true;
                }
                else
                {
                    waiter.Arm(transactionId);
                    Add(waiter);
                }
            }
            if (!lead)
            {
                waiter.Event.Wait();
                // Woken because the write covering it returned (the usual case, checked without the lock), or a write
                // failed, or to write next.
                if (!waiter.Lead) continue;
            }
            Lead(transactionId);
        }
    }

    /// <summary>Completes when <paramref name="transactionId"/>'s entry is durable; a thread-pool work item writes it if no one else is.</summary>
    public ValueTask WaitAsync(long transactionId)
    {
        AsyncWaiter waiter;
        lock (_lock)
        {
            if (_journal.DurableTransactionId >= transactionId) return default;
            try
            {
                _journal.ThrowIfFailedOrClosed(transactionId);
            }
            catch (StorageException e)
            {
                return ValueTask.FromException(e);
            }
            waiter = _asyncPool.TryPop(out var pooled) ? pooled : new AsyncWaiter(this);
            waiter.Arm(transactionId);
            Add(waiter);
            PromoteLeaderLocked();
        }
        return new ValueTask(waiter, waiter.Version);
    }

    /// <summary>After any durable write: wakes the waiters it covered.</summary>
    public void WakeDurable()
    {
        // Always under the lock: a committer that found its entry in a write under way registers under it, and must not
        // be missed by that write's return.
        lock (_lock)
        {
            WakeCoveredLocked();
            // A write made by another thread (a group's writer) may leave waiters whose entries came after it, with no leader.
            PromoteLeaderLocked();
        }
    }

    /// <summary>After a failed write or at close: every waiter wakes and learns it.</summary>
    public void WakeAll()
    {
        lock (_lock)
        {
            foreach (var waiter in _waiting) waiter.Signal(lead: false);
            _waiting.Clear();
            Volatile.Write(ref _waitingCount, 0);
        }
    }

    private void Add(Waiter waiter)
    {
        _waiting.Add(waiter);
        Volatile.Write(ref _waitingCount, _waiting.Count);
    }

    private void WakeCoveredLocked()
    {
        var durable = _journal.DurableTransactionId;
        var failed = _journal.IsFailedOrClosed;
        var kept = 0;
        for (var i = 0; i < _waiting.Count; i++)
        {
            var waiter = _waiting[i];
            if (failed || waiter.TransactionId <= durable) waiter.Signal(lead: false);
            else _waiting[kept++] = waiter;
        }
        _waiting.RemoveRange(kept, _waiting.Count - kept);
        Volatile.Write(ref _waitingCount, kept);
    }

    /// <summary>
    /// Writes what waits (more rounds while others wait for entries that came during a write), then hands over. A failed
    /// write is rethrown to the leader if it covered <paramref name="ownTransactionId"/>'s entry; every other waiter
    /// learns of it as <see cref="StorageErrorCode.EnvironmentPoisoned"/>.
    /// </summary>
    private void Lead(long ownTransactionId)
    {
        Exception? failure = null;
        try
        {
            var rounds = 0;
            while (_journal.WritePending() && ++rounds < MaxLeaderRounds && _journal.HasPendingEntries && Volatile.Read(ref _waitingCount) > 0)
            {
            }
        }
        catch (Exception e)
        {
            failure = e;
        }
        finally
        {
            HandOver();
        }
        if (failure is not null && _journal.DurableTransactionId < ownTransactionId) System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw(failure);
    }

    private void HandOver()
    {
        lock (_lock)
        {
            WakeCoveredLocked();
            _leading = false;
            PromoteLeaderLocked();
        }
    }

    /// <summary>
    /// With no leader and waiters left (their entries were appended during the last write), one of them writes next: a
    /// blocking waiter, or else a thread-pool work item. Waiters whose entries a write under way already carries need none:
    /// that write wakes them when it returns.
    /// </summary>
    private void PromoteLeaderLocked()
    {
        if (_leading) return;
        var needed = false;
        for (var i = 0; i < _waiting.Count; i++)
        {
            var waiter = _waiting[i];
            if (_journal.IsInWriteUnderWay(waiter.TransactionId)) continue;
            if (waiter is SyncWaiter next)
            {
                _waiting.RemoveAt(i);
                Volatile.Write(ref _waitingCount, _waiting.Count);
                _leading = true;
                next.Signal(lead: true);
                return;
            }
            needed = true;
        }
        if (!needed) return;
        _leading = true;
        QueuePoolLeader();
    }

    /// <summary>A thread-pool work item writes for asynchronous waiters (a failure reaches them through the journal).</summary>
    private void QueuePoolLeader() => ThreadPool.UnsafeQueueUserWorkItem(static waiters => waiters.Lead(0), this, preferLocal: false);

    private void ReturnToPool(AsyncWaiter waiter)
    {
        lock (_lock)
        {
            if (_asyncPool.Count < MaxPooledAsyncWaiters) _asyncPool.Push(waiter);
        }
    }

    private abstract class Waiter
    {
        public long TransactionId { get; protected set; }

        /// <summary>Wakes the waiter: its entry is durable, or a write failed, or (<paramref name="lead"/>) it writes next.</summary>
        public abstract void Signal(bool lead);
    }

    /// <summary>A blocked committing thread's (one per thread, reused).</summary>
    private sealed class SyncWaiter : Waiter
    {
        public ManualResetEventSlim Event { get; } = new(false, spinCount: 1);

        public bool Lead { get; private set; }

        public void Arm(long transactionId)
        {
            TransactionId = transactionId;
            Lead = false;
            Event.Reset();
        }

        public override void Signal(bool lead)
        {
            Lead = lead;
            Event.Set();
        }
    }

    /// <summary>An asynchronous committer's (pooled): completes a <see cref="ValueTask"/>, its continuation off the writing thread.</summary>
    private sealed class AsyncWaiter(DurableWaiters owner) : Waiter, IValueTaskSource
    {
        private ManualResetValueTaskSourceCore<bool> _core = new() { RunContinuationsAsynchronously = true };

        public short Version => _core.Version;

        public void Arm(long transactionId)
        {
            TransactionId = transactionId;
            _core.Reset();
        }

        public override void Signal(bool lead) => _core.SetResult(true);

        public void GetResult(short token)
        {
            _core.GetResult(token);
            owner.ReturnToPool(this);
        }

        public ValueTaskSourceStatus GetStatus(short token) => _core.GetStatus(token);

        public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
            _core.OnCompleted(continuation, state, token, flags);
    }
}
