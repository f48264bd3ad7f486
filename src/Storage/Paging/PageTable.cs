using System.Diagnostics;
using System.Numerics;
using Storage.Scratch;

namespace Storage.Paging;

/// <summary>
/// Maps a page number to its committed versions that are not in the data file yet, oldest first.
/// The writer adds versions at commit; the flusher removes them once written. Readers look up the
/// newest version not newer than their snapshot, without locks.
/// </summary>
/// <remarks>
/// <para>Built so that a commit allocates nothing in steady state: an open-addressing table of <see cref="Entry"/>
/// objects, one per page, whose version arrays are changed in place and which are recycled when their page leaves the
/// table. Every change is made under one lock (the writer adds and prunes, the flusher prunes and removes), so changes
/// never race each other; readers take no lock and check what they read:</para>
/// <list type="bullet">
/// <item>an entry's <see cref="Entry.Sequence"/> is odd while the entry changes (a sequence lock): a reader that saw it
/// change, or saw the entry belong to another page (recycled), looks again;</item>
/// <item>entries move between slots only when one leaves the table (deletion shifts the probe chain back) or the table
/// grows (into a new array). Leaving bumps <see cref="_moves"/>, so a reader that found nothing while an entry moved
/// looks again. A reader of an older array after growth misses only pages added after it grew, whose versions are newer
/// than any snapshot that reader can have: a page enters the table with a commit that is published afterwards.</item>
/// </list>
/// <para>A page found with no versions left its table after the flusher wrote it: the data file holds what any reader
/// that can still find that entry sees.</para>
/// </remarks>
internal sealed class PageTable
{
    private const int InitialSlots = 1024;

    /// <summary>Versions an entry holds before its array grows (kept with the entry when it is recycled).</summary>
    private const int InitialVersions = 4;

    private readonly Lock _mutate = new();
    private SlotArray _slots = new(InitialSlots);
    private int _pagesWithVersions;

    /// <summary>Odd while an entry leaves the table and others shift back into its slot.</summary>
    private int _moves;

    /// <summary>Entries whose page left the table, for reuse (linked through <see cref="Entry.NextFree"/>); changed under <see cref="_mutate"/>.</summary>
    private Entry? _free;

    public bool IsEmpty => Volatile.Read(ref _pagesWithVersions) == 0;

    /// <summary>
    /// The newest version of the page at or before the snapshot: its memory and page count. False when the page has no
    /// such version in the table (the data file holds what the snapshot reads).
    /// </summary>
    public unsafe bool TryGetPage(long pageNumber, long snapshotTransactionId, out byte* pointer, out int pageCount)
    {
        var spinner = new SpinWait();
        while (true)
        {
            var moves = Volatile.Read(ref _moves);
            if ((moves & 1) == 0)
            {
                var entry = Find(Volatile.Read(ref _slots), pageNumber);
                if (entry is not null)
                {
                    var read = entry.TryReadPage(pageNumber, snapshotTransactionId, out pointer, out pageCount);
                    if (read != ReadResult.Retry) return read == ReadResult.Found;
                }
                else if (Volatile.Read(ref _moves) == moves)
                {
                    pointer = null;
                    pageCount = 0;
                    return false;
                }
            }
            spinner.SpinOnce(sleep1Threshold: -1);
        }
    }

    /// <summary>Adds a committed version (called by the single writer, before it publishes the transaction).</summary>
    public void Add(long pageNumber, long transactionId, ScratchBuffer buffer)
    {
        lock (_mutate) AddLocked(pageNumber, transactionId, buffer);
    }

    /// <summary>As <see cref="Add"/>, for every page a commit changed and did not free, under one hold of the lock.</summary>
    public void AddCommitted(Dictionary<long, Transactions.DirtyPage> dirty, long transactionId)
    {
        lock (_mutate)
        {
            foreach (var (pageNumber, page) in dirty)
            {
                if (!page.IsFreed) AddLocked(pageNumber, transactionId, page.Buffer);
            }
        }
    }

    private void AddLocked(long pageNumber, long transactionId, ScratchBuffer buffer)
    {
        var entry = Find(_slots, pageNumber);
        if (entry is not null)
        {
            entry.BeginChange();
            entry.Append(transactionId, buffer);
            entry.EndChange();
            return;
        }
        entry = _free ?? new Entry();
        _free = entry.NextFree;
        entry.NextFree = null;
        // A recycled entry's readers see its sequence move on, and the new page number, before they trust it.
        entry.BeginChange();
        entry.PageNumber = pageNumber;
        entry.Count = 0;
        entry.Append(transactionId, buffer);
        entry.EndChange();
        Insert(entry);
        Interlocked.Increment(ref _pagesWithVersions);
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
        lock (_mutate) PruneLocked(pageNumber, snapshots, published, pruned);
    }

    /// <summary>
    /// <see cref="Prune"/> for the pages a commit changed and did not free, and then for <paramref name="again"/> (pages
    /// of earlier commits), under one hold of the lock.
    /// </summary>
    public void PruneCommitted(Dictionary<long, Transactions.DirtyPage> dirty, Collections.SegmentedQueue<(long TransactionId, long PageNumber)> again,
        ReadOnlySpan<long> snapshots, long published, List<ScratchBuffer> pruned)
    {
        lock (_mutate)
        {
            foreach (var (pageNumber, page) in dirty)
            {
                if (!page.IsFreed) PruneLocked(pageNumber, snapshots, published, pruned);
            }
            foreach (var (_, pageNumber) in again) PruneLocked(pageNumber, snapshots, published, pruned);
        }
    }

    /// <summary>
    /// <see cref="Prune"/> for the pages at the head of <paramref name="queue"/> whose transaction is at or before
    /// <paramref name="upTo"/>, at most <paramref name="max"/> of them, taking each off the queue, under one hold of the lock.
    /// </summary>
    /// <returns>How many were pruned and taken off.</returns>
    public int PruneQueued(Collections.SegmentedQueue<(long TransactionId, long PageNumber)> queue, long upTo, int max,
        ReadOnlySpan<long> snapshots, long published, List<ScratchBuffer> pruned)
    {
        var done = 0;
        lock (_mutate)
        {
            while (done < max && queue.TryPeek(out var next) && next.TransactionId <= upTo)
            {
                PruneLocked(next.PageNumber, snapshots, published, pruned);
                queue.Dequeue();
                done++;
            }
        }
        return done;
    }

    private void PruneLocked(long pageNumber, ReadOnlySpan<long> snapshots, long published, List<ScratchBuffer> pruned)
    {
        var entry = Find(_slots, pageNumber);
        if (entry is not null) PruneVersions(entry, snapshots, published, pruned);
    }

    /// <summary><see cref="Prune"/> over every page: for snapshots that ended while the pages they kept were not changed again.</summary>
    public void PruneAll(ReadOnlySpan<long> snapshots, long published, List<ScratchBuffer> pruned)
    {
        var slots = Volatile.Read(ref _slots);
        foreach (var entry in slots)
        {
            if (entry is null || Volatile.Read(ref entry.Count) < 2) continue;
            // One entry at a time, so that the writer's commits are not held up by a walk of the whole table.
            lock (_mutate) PruneVersions(entry, snapshots, published, pruned);
        }
    }

    /// <summary>Decides once per version which are needed, then compacts the entry's arrays in place.</summary>
    private static void PruneVersions(Entry entry, ReadOnlySpan<long> snapshots, long published, List<ScratchBuffer> pruned)
    {
        var count = entry.Count;
        if (count < 2) return;
        Span<bool> onStack = stackalloc bool[64];
        var needed = count <= onStack.Length ? onStack[..count] : new bool[count];
        var keep = 0;
        for (var i = 0; i < count; i++)
        {
            needed[i] = IsNeeded(entry.Transactions, count, i, snapshots, published);
            if (needed[i]) keep++;
        }
        if (keep < count) entry.KeepOnly(needed, pruned);
    }

    /// <summary>
    /// Version <paramref name="index"/> (versions oldest first) is needed when it is the newest, newer than the
    /// published state, or the newest one at or before the published state or one of the snapshots.
    /// </summary>
    private static bool IsNeeded(long[] transactions, int count, int index, ReadOnlySpan<long> snapshots, long published)
    {
        if (index == count - 1) return true;
        var from = transactions[index];
        var until = transactions[index + 1];
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
    /// while that snapshot can still read the data file. Walks the whole table (an estimate while commits run).
    /// </summary>
    public long PinnedBytes(long oldestSnapshot)
    {
        long bytes = 0;
        foreach (var entry in Volatile.Read(ref _slots))
        {
            if (entry is null) continue;
            lock (_mutate)
            {
                var count = entry.Count;
                for (var i = 0; i < count; i++)
                {
                    if (i < count - 1 || entry.Transactions[i] > oldestSnapshot) bytes += entry.Buffers[i]!.SizeBytes;
                }
            }
        }
        return bytes;
    }

    /// <summary>
    /// For each page, the newest version at or before <paramref name="upToTransactionId"/>. Called by the flusher, the
    /// only one that removes pages, so no page leaves meanwhile; pages the writer adds meanwhile hold only newer versions.
    /// </summary>
    public void CollectFlushable(long upToTransactionId, List<FlushCandidate> output)
    {
        // Grown once to what it may take, not doubled up to it: each step past 85,000 bytes is a large object.
        output.EnsureCapacity(output.Count + Volatile.Read(ref _pagesWithVersions));
        foreach (var entry in Volatile.Read(ref _slots))
        {
            if (entry is null) continue;
            lock (_mutate)
            {
                for (var i = entry.Count - 1; i >= 0; i--)
                {
                    if (entry.Transactions[i] <= upToTransactionId)
                    {
                        output.Add(new FlushCandidate(entry.PageNumber, entry.Buffers[i]!, entry.Transactions[i]));
                        break;
                    }
                }
            }
        }
    }

    /// <summary>Removes the versions at or before <paramref name="upToTransactionId"/> of the given pages, handing their buffers to <paramref name="removed"/>.</summary>
    public void RemoveUpTo(long upToTransactionId, List<FlushCandidate> pages, List<ScratchBuffer> removed)
    {
        Span<bool> onStack = stackalloc bool[64];
        removed.EnsureCapacity(removed.Count + pages.Count);
        foreach (var candidate in pages)
        {
            lock (_mutate)
            {
                var entry = Find(_slots, candidate.PageNumber);
                if (entry is null) continue;
                var count = entry.Count;
                var newer = count <= onStack.Length ? onStack[..count] : new bool[count];
                var keep = 0;
                for (var i = 0; i < count; i++)
                {
                    newer[i] = entry.Transactions[i] > upToTransactionId;
                    if (newer[i]) keep++;
                }
                if (keep == count) continue;
                entry.KeepOnly(newer, removed);
                if (keep == 0) Remove(entry);
            }
        }
    }

    /// <summary>Every buffer still held (at close).</summary>
    public IEnumerable<ScratchBuffer> AllBuffers()
    {
        foreach (var entry in Volatile.Read(ref _slots))
        {
            if (entry is null) continue;
            for (var i = 0; i < entry.Count; i++) yield return entry.Buffers[i]!;
        }
    }

    /// <summary>The entry of <paramref name="pageNumber"/> in <paramref name="slots"/>, or null (readers check what they found).</summary>
    private Entry? Find(SlotArray slots, long pageNumber)
    {
        var mask = slots.Length - 1;
        for (var i = Home(pageNumber, slots.Length); ; i = (i + 1) & mask)
        {
            var entry = Volatile.Read(ref slots[i]);
            if (entry is null) return null;
            if (entry.PageNumber == pageNumber) return entry;
        }
    }

    /// <summary>Fibonacci hashing: pages numbered close together land far apart.</summary>
    private static int Home(long pageNumber, int slotCount) =>
        (int)(((ulong)pageNumber * 0x9E3779B97F4A7C15UL) >> (64 - BitOperations.Log2((uint)slotCount)));

    /// <summary>Places a new entry (under <see cref="_mutate"/>), growing the table past half full.</summary>
    private void Insert(Entry entry)
    {
        if ((_pagesWithVersions + 1) * 2 > _slots.Length)
        {
            var larger = new SlotArray(_slots.Length * 2);
            foreach (var existing in _slots)
            {
                if (existing is not null) Place(larger, existing);
            }
            Volatile.Write(ref _slots, larger);
        }
        Place(_slots, entry);
    }

    private static void Place(SlotArray slots, Entry entry)
    {
        var mask = slots.Length - 1;
        var i = Home(entry.PageNumber, slots.Length);
        while (slots[i] is not null) i = (i + 1) & mask;
        Volatile.Write(ref slots[i], entry);
    }

    /// <summary>
    /// Takes an entry whose versions are all gone out of the table (under <see cref="_mutate"/>): the entries after it in
    /// its probe chain shift back (linear probing without tombstones), and the entry is kept for reuse.
    /// </summary>
    private void Remove(Entry entry)
    {
        var slots = _slots;
        var mask = slots.Length - 1;
        var hole = Home(entry.PageNumber, slots.Length);
        while (!ReferenceEquals(slots[hole], entry)) hole = (hole + 1) & mask;
        Interlocked.Increment(ref _moves);
        for (var i = (hole + 1) & mask; slots[i] is { } next; i = (i + 1) & mask)
        {
            // An entry may fill the hole when its home is not in (hole, i]: it would still be found from its home.
            var home = Home(next.PageNumber, slots.Length);
            var between = hole <= i ? home > hole && home <= i : home > hole || home <= i;
            if (between) continue;
            Volatile.Write(ref slots[hole], next);
            hole = i;
        }
        Volatile.Write(ref slots[hole], null);
        Volatile.Write(ref _moves, _moves + 1);
        Interlocked.Decrement(ref _pagesWithVersions);
        entry.NextFree = _free;
        _free = entry;
    }

    private enum ReadResult
    {
        NotFound,
        Found,
        Retry,
    }

    /// <summary>
    /// The table's slots, in segments of at most 8,192 (64 KiB): growing the table then never allocates on the large object
    /// heap, where an allocation counts toward a full collection. Growing to 65,536 slots in one array started a blocking
    /// gen2 collection in every W1 run, 12 ms inside the commit that grew it. A grown table is a new instance; readers
    /// of the old one read it as they read an old array.
    /// </summary>
    private sealed class SlotArray
    {
        private const int SegmentShift = 13;
        private const int SegmentMask = (1 << SegmentShift) - 1;

        private readonly Entry?[][] _segments;

        public SlotArray(int length)
        {
            Debug.Assert(BitOperations.IsPow2(length), "open addressing by mask needs a power of two");
            Length = length;
            var perSegment = Math.Min(length, 1 << SegmentShift);
            _segments = new Entry?[length / perSegment][];
            for (var i = 0; i < _segments.Length; i++) _segments[i] = new Entry?[perSegment];
        }

        public int Length { get; }

        public ref Entry? this[int index] => ref _segments[index >> SegmentShift][index & SegmentMask];

        public Enumerator GetEnumerator() => new(_segments);

        public struct Enumerator(Entry?[][] segments)
        {
            private int _segment;
            private int _index = -1;

            public readonly Entry? Current => segments[_segment][_index];

            public bool MoveNext()
            {
                while (_segment < segments.Length)
                {
                    if (++_index < segments[_segment].Length) return true;
                    _segment++;
                    _index = -1;
                }
                return false;
            }
        }
    }

    /// <summary>One page's versions, oldest first, changed in place under the table's lock and read under a sequence lock.</summary>
    private sealed class Entry
    {
        public long PageNumber = -1;

        /// <summary>Odd while the entry changes.</summary>
        public int Sequence;

        public int Count;

        public long[] Transactions = new long[InitialVersions];

        public ScratchBuffer?[] Buffers = new ScratchBuffer?[InitialVersions];

        public Entry? NextFree;

        /// <summary>
        /// The newest version's transaction, memory and page count, kept beside the arrays (0 when there is none): a lookup
        /// for a snapshot at or after it, the usual one, reads this entry only, not the two arrays and the buffer after it.
        /// </summary>
        public long NewestTransaction;

        public nint NewestPointer;

        public int NewestPageCount;

        public void BeginChange() => Interlocked.Increment(ref Sequence);

        public void EndChange() => Volatile.Write(ref Sequence, Sequence + 1);

        /// <summary>Appends the newest version (between <see cref="BeginChange"/> and <see cref="EndChange"/>).</summary>
        public void Append(long transactionId, ScratchBuffer buffer)
        {
            if (Count == Transactions.Length)
            {
                // Rare: more snapshots pin versions of one page than the arrays hold. Readers bound indexes by both.
                var transactions = new long[Count * 2];
                var buffers = new ScratchBuffer?[Count * 2];
                Transactions.CopyTo(transactions, 0);
                Buffers.CopyTo(buffers, 0);
                Volatile.Write(ref Transactions, transactions);
                Volatile.Write(ref Buffers, buffers);
            }
            Transactions[Count] = transactionId;
            Buffers[Count] = buffer;
            Volatile.Write(ref Count, Count + 1);
            KeepNewest();
        }

        /// <summary>Sets the newest version's fields from the arrays (between <see cref="BeginChange"/> and <see cref="EndChange"/>).</summary>
        private unsafe void KeepNewest()
        {
            var last = Count - 1;
            var buffer = last >= 0 ? Buffers[last] : null;
            NewestTransaction = buffer is null ? 0 : Transactions[last];
            NewestPageCount = buffer?.PageCount ?? 0;
            Volatile.Write(ref NewestPointer, buffer is null ? 0 : (nint)buffer.Pointer);
        }

        /// <summary>Keeps the versions <paramref name="keep"/> marks, in order, handing the others' buffers to <paramref name="dropped"/> (under the table's lock).</summary>
        public void KeepOnly(ReadOnlySpan<bool> keep, List<ScratchBuffer> dropped)
        {
            BeginChange();
            var kept = 0;
            for (var i = 0; i < keep.Length; i++)
            {
                if (!keep[i])
                {
                    dropped.Add(Buffers[i]!);
                    continue;
                }
                Transactions[kept] = Transactions[i];
                Buffers[kept++] = Buffers[i];
            }
            Array.Clear(Buffers, kept, keep.Length - kept);
            Volatile.Write(ref Count, kept);
            KeepNewest();
            EndChange();
        }

        /// <summary>
        /// As <see cref="TryRead"/>, for the page's memory: the newest version when the snapshot sees it, read from this
        /// entry alone, else the arrays.
        /// </summary>
        public unsafe ReadResult TryReadPage(long pageNumber, long snapshotTransactionId, out byte* pointer, out int pageCount)
        {
            pointer = null;
            pageCount = 0;
            var sequence = Volatile.Read(ref Sequence);
            if ((sequence & 1) != 0 || Volatile.Read(ref PageNumber) != pageNumber) return ReadResult.Retry;
            var newest = Volatile.Read(ref NewestPointer);
            if (newest != 0 && Volatile.Read(ref NewestTransaction) <= snapshotTransactionId)
            {
                var count = Volatile.Read(ref NewestPageCount);
                if (Volatile.Read(ref Sequence) != sequence) return ReadResult.Retry;
                pointer = (byte*)newest;
                pageCount = count;
                return ReadResult.Found;
            }
            var read = TryRead(pageNumber, snapshotTransactionId, out var buffer);
            if (read == ReadResult.Found)
            {
                pointer = buffer.Pointer;
                pageCount = buffer.PageCount;
            }
            return read;
        }

        /// <summary>The newest version at or before the snapshot, if this entry is still the page's and did not change while read.</summary>
        public ReadResult TryRead(long pageNumber, long snapshotTransactionId, out ScratchBuffer buffer)
        {
            buffer = null!;
            var sequence = Volatile.Read(ref Sequence);
            if ((sequence & 1) != 0 || Volatile.Read(ref PageNumber) != pageNumber) return ReadResult.Retry;
            var transactions = Volatile.Read(ref Transactions);
            var buffers = Volatile.Read(ref Buffers);
            var count = Math.Min(Volatile.Read(ref Count), Math.Min(transactions.Length, buffers.Length));
            ScratchBuffer? found = null;
            for (var i = count - 1; i >= 0; i--)
            {
                if (Volatile.Read(ref transactions[i]) <= snapshotTransactionId)
                {
                    found = Volatile.Read(ref buffers[i]);
                    break;
                }
            }
            if (Volatile.Read(ref Sequence) != sequence) return ReadResult.Retry;
            if (found is null) return ReadResult.NotFound;
            buffer = found;
            return ReadResult.Found;
        }
    }
}
