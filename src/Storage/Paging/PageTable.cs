using System.Collections.Concurrent;

namespace Storage.Paging;

/// <summary>
/// Maps a page number to its committed versions that are not in the data file yet, oldest first.
/// The writer adds versions at commit; the flusher removes them once written. Readers look up the
/// newest version not newer than their snapshot, without locks.
/// </summary>
internal sealed class PageTable
{
    private readonly ConcurrentDictionary<long, PageVersion[]> _versions = new();
    private int _pagesWithVersions;

    public bool IsEmpty => Volatile.Read(ref _pagesWithVersions) == 0;

    public bool TryGet(long pageNumber, long snapshotTransactionId, out ScratchBuffer buffer)
    {
        if (_versions.TryGetValue(pageNumber, out var versions))
        {
            for (var i = versions.Length - 1; i >= 0; i--)
            {
                if (versions[i].TransactionId <= snapshotTransactionId)
                {
                    buffer = versions[i].Buffer;
                    return true;
                }
            }
        }
        buffer = null!;
        return false;
    }

    /// <summary>Adds a committed version (called by the single writer, before it publishes the transaction).</summary>
    public void Add(long pageNumber, long transactionId, ScratchBuffer buffer)
    {
        var version = new PageVersion(transactionId, buffer);
        while (true)
        {
            if (!_versions.TryGetValue(pageNumber, out var current))
            {
                if (_versions.TryAdd(pageNumber, [version]))
                {
                    Interlocked.Increment(ref _pagesWithVersions);
                    return;
                }
                continue;
            }
            var next = new PageVersion[current.Length + 1];
            current.CopyTo(next, 0);
            next[^1] = version;
            if (_versions.TryUpdate(pageNumber, next, current)) return;
        }
    }

    /// <summary>
    /// Drops the versions of <paramref name="pageNumber"/> that no snapshot can see any more, handing their
    /// buffers to <paramref name="pruned"/>. A page needs only its newest version and, for each snapshot that
    /// may still read it, the newest version at or before that snapshot:
    /// <list type="bullet">
    /// <item><paramref name="snapshots"/>: the snapshots pinned in the reader table (sorted, ascending), read after
    /// <paramref name="published"/> was;</item>
    /// <item><paramref name="published"/>: the state published when the slots were read. A transaction that
    /// registers later pins it or a newer one, so every version newer than it is kept too (a commit adds its
    /// versions before it publishes).</item>
    /// </list>
    /// Nothing a kept snapshot reads is dropped, and a dropped version is one that no transaction can reach
    /// any more: its buffer may be reused at once.
    /// </summary>
    public void Prune(long pageNumber, ReadOnlySpan<long> snapshots, long published, List<ScratchBuffer> pruned)
    {
        if (_versions.TryGetValue(pageNumber, out var current)) PruneVersions(pageNumber, current, snapshots, published, pruned);
    }

    /// <summary><see cref="Prune"/> over every page: for snapshots that ended while the pages they kept were not changed again.</summary>
    public void PruneAll(ReadOnlySpan<long> snapshots, long published, List<ScratchBuffer> pruned)
    {
        foreach (var (page, versions) in _versions) PruneVersions(page, versions, snapshots, published, pruned);
    }

    /// <summary>Decides once per version which are needed, then swaps the array (again from a fresh read if the writer or the flusher swapped it meanwhile).</summary>
    private void PruneVersions(long pageNumber, PageVersion[] current, ReadOnlySpan<long> snapshots, long published, List<ScratchBuffer> pruned)
    {
        Span<bool> onStack = stackalloc bool[64];
        while (current.Length > 1)
        {
            var needed = current.Length <= onStack.Length ? onStack[..current.Length] : new bool[current.Length];
            var keep = 0;
            for (var i = 0; i < current.Length; i++)
            {
                needed[i] = IsNeeded(current, i, snapshots, published);
                if (needed[i]) keep++;
            }
            if (keep == current.Length) return;
            var next = new PageVersion[keep];
            for (int i = 0, j = 0; i < current.Length; i++)
            {
                if (needed[i]) next[j++] = current[i];
            }
            if (_versions.TryUpdate(pageNumber, next, current))
            {
                for (var i = 0; i < current.Length; i++)
                {
                    if (!needed[i]) pruned.Add(current[i].Buffer);
                }
                return;
            }
            if (!_versions.TryGetValue(pageNumber, out current!)) return;
        }
    }

    /// <summary>
    /// Version <paramref name="index"/> (versions oldest first) is needed when it is the newest, newer than the
    /// published state, or the newest one at or before the published state or one of the snapshots.
    /// </summary>
    private static bool IsNeeded(PageVersion[] versions, int index, ReadOnlySpan<long> snapshots, long published)
    {
        if (index == versions.Length - 1) return true;
        var from = versions[index].TransactionId;
        var until = versions[index + 1].TransactionId;
        if (from > published || (published >= from && published < until)) return true;
        // The first snapshot at or after this version decides: it sees this version unless the next one is not newer than it.
        var first = FirstAtOrAfter(snapshots, from);
        return first < snapshots.Length && snapshots[first] < until;
    }

    private static int FirstAtOrAfter(ReadOnlySpan<long> sorted, long value)
    {
        int lo = 0, hi = sorted.Length;
        while (lo < hi)
        {
            var mid = (lo + hi) >>> 1;
            if (sorted[mid] < value) lo = mid + 1;
            else hi = mid;
        }
        return lo;
    }

    /// <summary>
    /// Bytes of scratch held for snapshots older than the newest commit: versions a newer one replaced (kept because a
    /// snapshot reads them), and versions newer than <paramref name="oldestSnapshot"/>, which the flusher may not write
    /// while that snapshot can still read the data file. Walks the whole table.
    /// </summary>
    public long PinnedBytes(long oldestSnapshot)
    {
        long bytes = 0;
        foreach (var (_, versions) in _versions)
        {
            for (var i = 0; i < versions.Length; i++)
            {
                if (i < versions.Length - 1 || versions[i].TransactionId > oldestSnapshot) bytes += versions[i].Buffer.SizeBytes;
            }
        }
        return bytes;
    }

    /// <summary>For each page, the newest version at or before <paramref name="upToTransactionId"/>.</summary>
    public void CollectFlushable(long upToTransactionId, List<FlushCandidate> output)
    {
        foreach (var (page, versions) in _versions)
        {
            for (var i = versions.Length - 1; i >= 0; i--)
            {
                if (versions[i].TransactionId <= upToTransactionId)
                {
                    output.Add(new FlushCandidate(page, versions[i].Buffer, versions[i].TransactionId));
                    break;
                }
            }
        }
    }

    /// <summary>Removes the versions at or before <paramref name="upToTransactionId"/> of the given pages, handing their buffers to <paramref name="removed"/>.</summary>
    public void RemoveUpTo(long upToTransactionId, List<FlushCandidate> pages, List<ScratchBuffer> removed)
    {
        foreach (var candidate in pages)
        {
            var page = candidate.PageNumber;
            while (true)
            {
                if (!_versions.TryGetValue(page, out var current)) break;
                var keep = 0;
                foreach (var v in current) if (v.TransactionId > upToTransactionId) keep++;
                if (keep == current.Length) break;
                if (keep == 0)
                {
                    if (!_versions.TryRemove(new KeyValuePair<long, PageVersion[]>(page, current))) continue;
                    Interlocked.Decrement(ref _pagesWithVersions);
                }
                else
                {
                    var next = new PageVersion[keep];
                    var j = 0;
                    foreach (var v in current) if (v.TransactionId > upToTransactionId) next[j++] = v;
                    if (!_versions.TryUpdate(page, next, current)) continue;
                }
                foreach (var v in current) if (v.TransactionId <= upToTransactionId) removed.Add(v.Buffer);
                break;
            }
        }
    }

    /// <summary>Every buffer still held (at close).</summary>
    public IEnumerable<ScratchBuffer> AllBuffers()
    {
        foreach (var (_, versions) in _versions)
        {
            foreach (var v in versions) yield return v.Buffer;
        }
    }

    private readonly record struct PageVersion(long TransactionId, ScratchBuffer Buffer);
}
