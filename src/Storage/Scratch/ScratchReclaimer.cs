namespace Storage.Scratch;

/// <summary>
/// Scratch buffers unlinked from the page table, waiting until no transaction (or flush) that
/// started before they were unlinked is still running. Both the writer and the flusher retire
/// buffers here and free what has become unreachable.
/// </summary>
internal sealed class ScratchReclaimer
{
    private readonly Collections.SegmentedQueue<(long Epoch, ScratchBuffer Buffer)> _waiting = new();
    private readonly object _lock = new();
    private readonly ScratchPool _pool;
    private int _waitingCount;

    public ScratchReclaimer(ScratchPool pool) => _pool = pool;

    /// <summary>Whether any buffer waits (read without the lock: a stale answer only delays a reclaim).</summary>
    public bool HasWaiting => Volatile.Read(ref _waitingCount) != 0;

    /// <summary>Buffers unlinked before <paramref name="epoch"/> was started.</summary>
    public void Retire(List<ScratchBuffer> buffers, long epoch)
    {
        if (buffers.Count == 0) return;
        lock (_lock)
        {
            foreach (var buffer in buffers) _waiting.Enqueue((epoch, buffer));
            Volatile.Write(ref _waitingCount, _waiting.Count);
        }
        buffers.Clear();
    }

    /// <summary>Frees every buffer retired in an epoch no running transaction predates.</summary>
    public void Reclaim(long oldestActiveEpoch, bool onWriter)
    {
        lock (_lock)
        {
            while (_waiting.TryPeek(out var head) && head.Epoch <= oldestActiveEpoch)
            {
                _waiting.Dequeue();
                _pool.Return(head.Buffer, onWriter);
            }
            Volatile.Write(ref _waitingCount, _waiting.Count);
        }
    }

    /// <summary>At close, once nothing can point into scratch memory.</summary>
    public void ReleaseAll()
    {
        lock (_lock)
        {
            while (_waiting.TryDequeue(out var item)) item.Buffer.Release();
            Volatile.Write(ref _waitingCount, 0);
        }
    }
}
