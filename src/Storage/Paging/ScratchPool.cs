namespace Storage.Paging;

/// <summary>
/// Hands out scratch buffers and keeps released single pages for reuse, so steady write loads do not
/// call the native allocator per page. Counts the bytes in use for the flush budget.
/// </summary>
internal sealed class ScratchPool : IDisposable
{
    private const int MaxPooledPages = 4096;

    private readonly Stack<ScratchBuffer> _singles = new();
    private readonly object _lock = new();
    private long _bytesInUse;

    public long BytesInUse => Interlocked.Read(ref _bytesInUse);

    public ScratchBuffer Rent(int pageCount)
    {
        Interlocked.Add(ref _bytesInUse, (long)pageCount * PageLayout.PageSizeBytes);
        if (pageCount == 1)
        {
            lock (_lock)
            {
                if (_singles.TryPop(out var pooled)) return pooled;
            }
        }
        return new ScratchBuffer(pageCount);
    }

    public void Return(ScratchBuffer buffer)
    {
        Interlocked.Add(ref _bytesInUse, -buffer.SizeBytes);
        if (buffer.PageCount == 1)
        {
            lock (_lock)
            {
                if (_singles.Count < MaxPooledPages)
                {
                    _singles.Push(buffer);
                    return;
                }
            }
        }
        buffer.Release();
    }

    public void Dispose()
    {
        lock (_lock)
        {
            while (_singles.TryPop(out var b)) b.Release();
        }
    }
}
