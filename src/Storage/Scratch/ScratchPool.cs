using Storage.Paging;

namespace Storage.Scratch;

/// <summary>
/// Hands out scratch buffers and keeps released single pages for reuse, so steady write loads do not
/// call the native allocator (and fault in fresh memory) per page. Counts the bytes in use for the
/// flush budget.
/// </summary>
/// <remarks>
/// The writer takes and gives back most buffers (copy-on-write, then pruning at commit): those go
/// through a stack only the writer touches, so the next copy lands in memory that is still in cache.
/// Buffers freed on other threads (the flusher) go through a shared stack under a lock, sized once (under the large
/// object heap's threshold), so that pooling never allocates.
/// Single native pages come from a <see cref="ScratchArena"/>; those the pool does not keep go back to the kernel in
/// batches, on the flusher's thread (<see cref="DecommitExcess"/>), never one system call per page on the writer's.
/// While <see cref="Spilling"/> is on (scratch is past its budget and snapshots keep it there), single pages come
/// from the <see cref="ScratchFile"/> instead, and native pages given back are handed back rather than kept.
/// </remarks>
internal sealed class ScratchPool : IDisposable
{
    private const int MaxPooledPages = 8192;

    /// <summary>What <c>poisonReturned</c> fills returned buffers with: not a valid page header (its page number is absurd).</summary>
    public const byte PoisonByte = 0xDB;

    private readonly Stack<ScratchBuffer> _writerStack = new();
    private readonly bool _poisonReturned;
    private readonly Stack<ScratchBuffer> _shared = new(MaxPooledPages);
    private readonly Lock _sharedLock = new();
    private readonly ScratchArena _arena;
    private List<ScratchBuffer> _excess;
    private readonly object _excessLock = new();
    private long _bytesInUse;

    /// <param name="poisonReturned">Test seam: fill every buffer given back with a pattern, so that a reader still
    /// pointing into one reads garbage (and fails its checks) instead of a plausible stale page.</param>
    /// <param name="spillFile">Where pages go while <see cref="Spilling"/> is on; null: never.</param>
    /// <param name="pagesExpected">Pages the lists of pages given back are sized for up front (the scratch budget's).</param>
    public ScratchPool(bool poisonReturned = false, ScratchFile? spillFile = null, int pagesExpected = 0)
    {
        _poisonReturned = poisonReturned;
        SpillFile = spillFile;
        _excess = new List<ScratchBuffer>(pagesExpected);
        _decommitting = new List<ScratchBuffer>(pagesExpected);
        _arena = new ScratchArena(pagesExpected);
    }

    /// <summary>Every scratch byte handed out, in memory or in the scratch file.</summary>
    public long BytesInUse => Interlocked.Read(ref _bytesInUse);

    /// <summary>The part of <see cref="BytesInUse"/> in the scratch file.</summary>
    public long SpilledBytes => SpillFile?.BytesInUse ?? 0;

    /// <summary>The part of <see cref="BytesInUse"/> in native memory.</summary>
    public long MemoryBytes => BytesInUse - SpilledBytes;

    public ScratchFile? SpillFile { get; }

    /// <summary>Whether new single pages go to the scratch file (set by the flusher, read by the writer).</summary>
    public bool Spilling
    {
        get => _spilling;
        set => _spilling = value && SpillFile is not null;
    }

    private volatile bool _spilling;

    /// <summary>Rents a buffer; <paramref name="onWriter"/> says the caller holds the write lock.</summary>
    public ScratchBuffer Rent(int pageCount, bool onWriter = true)
    {
        Interlocked.Add(ref _bytesInUse, (long)pageCount * PageLayout.PageSizeBytes);
        if (pageCount == 1)
        {
            if (_spilling && SpillFile!.TryRent(out var spilled)) return spilled;
            if (onWriter && _writerStack.TryPop(out var warm)) return warm;
            // Read without the lock as a hint: an empty stack costs no lock.
            if (_shared.Count > 0)
            {
                lock (_sharedLock)
                {
                    if (_shared.TryPop(out var pooled)) return pooled;
                }
            }
            lock (_excessLock)
            {
                // Still resident: cheaper than a page the kernel must fault in and zero again.
                if (_excess.Count > 0)
                {
                    var last = _excess[^1];
                    _excess.RemoveAt(_excess.Count - 1);
                    return last;
                }
            }
            return _arena.Rent();
        }
        return new ScratchBuffer(pageCount);
    }

    /// <summary>Gives a buffer back; <paramref name="onWriter"/> says the caller holds the write lock.</summary>
    public unsafe void Return(ScratchBuffer buffer, bool onWriter)
    {
        Interlocked.Add(ref _bytesInUse, -buffer.SizeBytes);
        if (_poisonReturned && buffer.Pointer != null) new Span<byte>(buffer.Pointer, (int)Math.Min(buffer.SizeBytes, int.MaxValue)).Fill(PoisonByte);
        if (buffer.File is { } file)
        {
            file.Return(buffer);
            return;
        }
        if (buffer.PageCount == 1 && !_spilling)
        {
            if (onWriter && _writerStack.Count < MaxPooledPages)
            {
                _writerStack.Push(buffer);
                return;
            }
            lock (_sharedLock)
            {
                if (_shared.Count < MaxPooledPages)
                {
                    _shared.Push(buffer);
                    return;
                }
            }
        }
        if (buffer.Arena is not null)
        {
            // Handed back to the kernel later, in address order and in runs, by DecommitExcess (off the commit path).
            lock (_excessLock) _excess.Add(buffer);
        }
        else
        {
            buffer.Release();
        }
    }

    /// <summary>Pages given back past what the pool keeps, waiting for <see cref="DecommitExcess"/>.</summary>
    public int ExcessPages
    {
        get
        {
            lock (_excessLock) return _excess.Count;
        }
    }

    /// <summary>Hands the pages the pool does not keep back to the kernel, in runs. Called by the flusher.</summary>
    public void DecommitExcess()
    {
        List<ScratchBuffer> pages;
        lock (_excessLock)
        {
            if (_excess.Count == 0) return;
            // The two lists trade places: no copy, and no new list at each flush (unless two calls overlap).
            pages = _excess;
            _excess = _decommitting ?? [];
            _decommitting = null;
        }
        _arena.Decommit(pages);
        pages.Clear();
        lock (_excessLock) _decommitting = pages;
    }

    /// <summary>An empty list for <see cref="DecommitExcess"/> to put in place of the one it hands to the arena; null while a call has it.</summary>
    private List<ScratchBuffer>? _decommitting;

    public void Dispose()
    {
        while (_writerStack.TryPop(out var b)) b.Release();
        lock (_sharedLock)
        {
            while (_shared.TryPop(out var b)) b.Release();
        }
        lock (_excessLock) _excess.Clear();
        _arena.Dispose();
        SpillFile?.Dispose();
    }
}
