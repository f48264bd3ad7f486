using System.Collections.Concurrent;

namespace Storage.Paging;

/// <summary>
/// Hands out scratch buffers and keeps released single pages for reuse, so steady write loads do not
/// call the native allocator (and fault in fresh memory) per page. Counts the bytes in use for the
/// flush budget. Lock-free: the writer rents and returns on the commit path, the flusher returns.
/// </summary>
internal sealed class ScratchPool : IDisposable
{
    private const int MaxPooledPages = 8192;

    private readonly ConcurrentQueue<ScratchBuffer> _singles = new();
    private int _pooled;
    private long _bytesInUse;

    public long BytesInUse => Interlocked.Read(ref _bytesInUse);

    public ScratchBuffer Rent(int pageCount)
    {
        Interlocked.Add(ref _bytesInUse, (long)pageCount * PageLayout.PageSizeBytes);
        if (pageCount == 1 && _singles.TryDequeue(out var pooled))
        {
            Interlocked.Decrement(ref _pooled);
            return pooled;
        }
        return new ScratchBuffer(pageCount);
    }

    public void Return(ScratchBuffer buffer)
    {
        Interlocked.Add(ref _bytesInUse, -buffer.SizeBytes);
        if (buffer.PageCount == 1 && Interlocked.Increment(ref _pooled) <= MaxPooledPages)
        {
            _singles.Enqueue(buffer);
            return;
        }
        if (buffer.PageCount == 1) Interlocked.Decrement(ref _pooled);
        buffer.Release();
    }

    public void Dispose()
    {
        while (_singles.TryDequeue(out var b)) b.Release();
    }
}
