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
    /// Drops versions of <paramref name="pageNumber"/> that no snapshot can see any more: a version is
    /// needed only while some snapshot is older than the next version. Call after publishing the
    /// transaction that added the newest version, with the oldest snapshot still in use.
    /// </summary>
    public void Prune(long pageNumber, long oldestSnapshot, List<ScratchBuffer> pruned)
    {
        while (true)
        {
            if (!_versions.TryGetValue(pageNumber, out var current) || current.Length < 2) return;
            // Versions are oldest first; version i is superseded for everyone once version i + 1 is not newer than the oldest snapshot.
            var drop = 0;
            while (drop + 1 < current.Length && current[drop + 1].TransactionId <= oldestSnapshot) drop++;
            if (drop == 0) return;
            var next = current[drop..];
            if (!_versions.TryUpdate(pageNumber, next, current)) continue;
            for (var i = 0; i < drop; i++) pruned.Add(current[i].Buffer);
            return;
        }
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
