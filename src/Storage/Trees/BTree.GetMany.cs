using System.Buffers;
using Storage.Paging;

namespace Storage.Trees;

internal sealed unsafe partial class BTree
{
    /// <summary>
    /// Looks many keys up as one batch. The keys are sorted, then the tree is descended one level at a time for all
    /// of them: the distinct pages the next level needs are handed to <see cref="ITreePageStore.Prefetch"/> together
    /// (sorted, adjacent ones merged) before any of them is read, so a cold lookup waits for one round of reads per
    /// level instead of one read per page. Overflow runs of found values are read ahead the same way.
    /// </summary>
    /// <param name="keys">The keys; a key given twice is reported twice, once for each index.</param>
    /// <param name="onFound">Called for each key present, in key order, with the value (no copy; valid until the
    /// transaction ends) and the key's index in <paramref name="keys"/>. It must not change the tree.</param>
    /// <returns>How many of the keys are present.</returns>
    /// <remarks>Key sizes are checked by the caller (<see cref="Tree.GetMany(ReadOnlySpan{ReadOnlyMemory{byte}}, ReadOnlySpanAction{byte, int})"/>).</remarks>
    /// <param name="owner">The transaction the tree is read in: checked after each call of <paramref name="onFound"/>, which
    /// may have ended it (its pages then are no longer there to read).</param>
    public int GetMany(ReadOnlySpan<ReadOnlyMemory<byte>> keys, ReadOnlySpanAction<byte, int> onFound, Transaction? owner = null)
    {
        ArgumentNullException.ThrowIfNull(onFound);
        int count = keys.Length;
        if (count == 0)
        {
            return 0;
        }

        var sortedKeys = ArrayPool<ReadOnlyMemory<byte>>.Shared.Rent(count);
        var indices = ArrayPool<int>.Shared.Rent(count);
        var pages = ArrayPool<long>.Shared.Rent(count);
        var slots = ArrayPool<int>.Shared.Rent(count);
        var runs = ArrayPool<PageRun>.Shared.Rent(count);
        try
        {
            keys.CopyTo(sortedKeys);
            for (int i = 0; i < count; i++)
            {
                indices[i] = i;
            }
            Array.Sort(sortedKeys, indices, 0, count, KeyOrder.Instance);

            DescendAll(sortedKeys.AsSpan(0, count), pages.AsSpan(0, count), runs);
            int found = SearchLeaves(sortedKeys.AsSpan(0, count), pages.AsSpan(0, count), slots.AsSpan(0, count), runs);

            long version = _state.Version;
            int leafLevel = _state.Depth - 1;
            long openPageNumber = -1;
            TreePage leaf = default;
            for (int i = 0; i < count; i++)
            {
                if (slots[i] < 0)
                {
                    continue;
                }
                if (pages[i] != openPageNumber)
                {
                    openPageNumber = pages[i];
                    leaf = OpenPageAtLevel(openPageNumber, leafLevel);
                }
                onFound(ResolveValue(leaf.GetValue(slots[i])), indices[i]);
                owner?.EnsureUsable();
                if (_state.Version != version)
                {
                    throw new InvalidOperationException("The tree changed while GetMany was reporting values.");
                }
            }
            return found;
        }
        finally
        {
            ArrayPool<ReadOnlyMemory<byte>>.Shared.Return(sortedKeys, clearArray: true);
            ArrayPool<int>.Shared.Return(indices);
            ArrayPool<long>.Shared.Return(pages);
            ArrayPool<int>.Shared.Return(slots);
            ArrayPool<PageRun>.Shared.Return(runs);
        }
    }

    /// <summary>Sets <paramref name="pages"/>[i] to the leaf that holds <paramref name="sortedKeys"/>[i], a level at a time.</summary>
    private void DescendAll(ReadOnlySpan<ReadOnlyMemory<byte>> sortedKeys, Span<long> pages, PageRun[] runs)
    {
        pages.Fill(_state.RootPage);
        int leafLevel = _state.Depth - 1;
        for (int level = 0; level < leafLevel; level++)
        {
            int runCount = 0;
            long openPageNumber = -1;
            TreePage page = default;
            for (int i = 0; i < pages.Length; i++)
            {
                if (pages[i] != openPageNumber)
                {
                    openPageNumber = pages[i];
                    page = OpenPageAtLevel(openPageNumber, level);
                }
                long child = page.GetChild(page.SearchBranch(sortedKeys[i].Span));
                // Sorted keys reach each child in one stretch, so comparing with the last one finds the distinct pages.
                if (runCount == 0 || runs[runCount - 1].First != child)
                {
                    runs[runCount++] = new PageRun(child, 1);
                }
                pages[i] = child;
            }
            _store.Prefetch(runs.AsSpan(0, runCount));
        }
    }

    /// <summary>
    /// Sets <paramref name="slots"/>[i] to the key's index in its leaf, or -1 when it is missing; reads ahead the
    /// overflow runs of the values found. Returns how many keys were found.
    /// </summary>
    private int SearchLeaves(ReadOnlySpan<ReadOnlyMemory<byte>> sortedKeys, ReadOnlySpan<long> pages, Span<int> slots, PageRun[] runs)
    {
        int leafLevel = _state.Depth - 1;
        int found = 0;
        int overflowCount = 0;
        long openPageNumber = -1;
        TreePage leaf = default;
        for (int i = 0; i < pages.Length; i++)
        {
            if (pages[i] != openPageNumber)
            {
                openPageNumber = pages[i];
                leaf = OpenPageAtLevel(openPageNumber, leafLevel);
            }
            int index = leaf.FindInLeaf(sortedKeys[i].Span);
            slots[i] = index;
            if (index < 0)
            {
                continue;
            }
            found++;
            var value = leaf.GetValue(index);
            if (value.IsOverflow)
            {
                runs[overflowCount++] = new PageRun(value.OverflowPage, 1);
            }
        }
        if (overflowCount > 0)
        {
            // First the runs' first pages, whose headers give the runs' lengths; then the whole runs.
            _store.Prefetch(runs.AsSpan(0, overflowCount));
            for (int i = 0; i < overflowCount; i++)
            {
                ReadOverflowHeader(runs[i].First, out int pageCount);
                runs[i] = runs[i] with { Count = pageCount };
            }
            _store.Prefetch(runs.AsSpan(0, overflowCount));
        }
        return found;
    }

    /// <summary>Ordinal (memcmp) order of keys, as the tree sorts them.</summary>
    private sealed class KeyOrder : IComparer<ReadOnlyMemory<byte>>
    {
        public static readonly KeyOrder Instance = new();

        public int Compare(ReadOnlyMemory<byte> x, ReadOnlyMemory<byte> y) => KeyComparer.Compare(x.Span, y.Span);
    }
}
