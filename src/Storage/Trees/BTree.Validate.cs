using Storage.Paging;

namespace Storage.Trees;

/// <summary>
/// The consistency check, shared by tests and the checker tool. It reads every page once and throws
/// <see cref="StorageCorruptedException"/> naming the first page that breaks an invariant.
/// </summary>
internal sealed unsafe partial class BTree
{
    /// <summary>
    /// Checks: page headers (number, type, bounds, owning tree); key order within pages; every key inside the
    /// range its parents' separators give it; branch first keys empty and later keys non-empty; all leaves at
    /// depth <see cref="TreeState.Depth"/>; no page reachable twice (cycles, shared pages, overlapping runs); no
    /// empty leaf but an empty root; at least one child per branch and two for a root branch; overflow run
    /// headers; and entry and page counts against <see cref="TreeState"/>.
    /// </summary>
    public void Validate()
    {
        var totals = new ValidationTotals();
        ValidateSubtree(_state.RootPage, 0, default, false, default, false, totals);
        CheckCount(totals.Entries, _state.Entries, "entries");
        CheckCount(totals.LeafPages, _state.LeafPages, "leaf pages");
        CheckCount(totals.BranchPages, _state.BranchPages, "branch pages");
        CheckCount(totals.OverflowPages, _state.OverflowPages, "overflow pages");
    }

    private void CheckCount(long walked, long recorded, string what)
    {
        if (walked != recorded)
        {
            TreeThrowHelper.ThrowCorrupted(_state.RootPage, $"Tree {_state.TreeId} has {walked} {what}, its header says {recorded}.");
        }
    }

    /// <summary>
    /// Checks the page and its subtree; its keys must be at or above <paramref name="lower"/> (when
    /// <paramref name="hasLower"/>) and below <paramref name="upper"/> (when <paramref name="hasUpper"/>).
    /// </summary>
    private void ValidateSubtree(long pageNumber, int level, ReadOnlySpan<byte> lower, bool hasLower,
        ReadOnlySpan<byte> upper, bool hasUpper, ValidationTotals totals)
    {
        var page = OpenPageAtLevel(pageNumber, level);
        ClaimPages(pageNumber, 1, totals);
        var header = (PageHeader*)page.Pointer;
        if (header->TreeId != _state.TreeId)
        {
            TreeThrowHelper.ThrowCorrupted(pageNumber, $"Page belongs to tree {header->TreeId}, but is reachable from tree {_state.TreeId}.");
        }
        page.ComputeUsedBytes(); // throws when the nodes take more room than the node area (shared or overlapping nodes)
        page.CheckKeyHeads();

        bool isRoot = level == 0;
        int count = page.Count;
        if (page.IsLeaf)
        {
            totals.LeafPages++;
            totals.Entries += count;
            if (count == 0 && !isRoot)
            {
                TreeThrowHelper.ThrowCorrupted(pageNumber, "A leaf other than the root is empty.");
            }
            for (int i = 0; i < count; i++)
            {
                var key = page.GetKey(i);
                CheckKeyInRange(page, i, key, i > 0 ? page.GetKey(i - 1) : lower, i > 0 || hasLower, i > 0, upper, hasUpper);
                var value = page.GetValue(i);
                if (value.IsOverflow)
                {
                    ValidateOverflow(value.OverflowPage, totals);
                }
            }
            return;
        }

        totals.BranchPages++;
        if (count < (isRoot ? 2 : 1))
        {
            TreeThrowHelper.ThrowCorrupted(pageNumber, $"Branch has {count} children.");
        }
        if (page.GetKey(0).Length != 0)
        {
            TreeThrowHelper.ThrowCorrupted(pageNumber, "The first node of a branch has a key; it must be empty (minus infinity).");
        }
        for (int i = 1; i < count; i++)
        {
            var key = page.GetKey(i);
            if (key.IsEmpty)
            {
                TreeThrowHelper.ThrowCorrupted(pageNumber, $"Branch node {i} has an empty key; only node 0 may.");
            }
            // A separator may equal the lower bound (its left neighbour's range is then empty), hence "strict" only within the page.
            CheckKeyInRange(page, i, key, i > 1 ? page.GetKey(i - 1) : lower, i > 1 || hasLower, i > 1, upper, hasUpper);
        }
        for (int i = 0; i < count; i++)
        {
            bool childHasLower = i > 0 || hasLower;
            var childLower = i > 0 ? page.GetKey(i) : lower;
            bool childHasUpper = i + 1 < count || hasUpper;
            var childUpper = i + 1 < count ? page.GetKey(i + 1) : upper;
            ValidateSubtree(page.GetChild(i), level + 1, childLower, childHasLower, childUpper, childHasUpper, totals);
        }
    }

    private static void CheckKeyInRange(TreePage page, int index, ReadOnlySpan<byte> key, ReadOnlySpan<byte> lower, bool hasLower,
        bool lowerIsExclusive, ReadOnlySpan<byte> upper, bool hasUpper)
    {
        if (hasLower)
        {
            int comparison = key.SequenceCompareTo(lower);
            if (comparison < 0 || (comparison == 0 && lowerIsExclusive))
            {
                TreeThrowHelper.ThrowCorrupted(page.PageNumber, $"Key {index} is out of order: it is not above the key before it or the parent's separator.");
            }
        }
        if (hasUpper && key.SequenceCompareTo(upper) >= 0)
        {
            TreeThrowHelper.ThrowCorrupted(page.PageNumber, $"Key {index} is not below the parent's next separator.");
        }
    }

    private void ValidateOverflow(long firstPageNumber, ValidationTotals totals)
    {
        ReadOverflowHeader(firstPageNumber, out int pageCount);
        ClaimPages(firstPageNumber, pageCount, totals);
        var header = (PageHeader*)_store.GetPage(firstPageNumber);
        if (header->TreeId != _state.TreeId)
        {
            TreeThrowHelper.ThrowCorrupted(firstPageNumber, $"Overflow run belongs to tree {header->TreeId}, but is reachable from tree {_state.TreeId}.");
        }
        _store.GetPages(firstPageNumber, pageCount);
        totals.OverflowPages += pageCount;
    }

    private static void ClaimPages(long firstPageNumber, int count, ValidationTotals totals)
    {
        for (long pageNumber = firstPageNumber; pageNumber < firstPageNumber + count; pageNumber++)
        {
            if (!totals.SeenPages.Add(pageNumber))
            {
                TreeThrowHelper.ThrowCorrupted(pageNumber, "Page is reachable twice in the tree (a cycle, a shared page or overlapping overflow runs).");
            }
        }
    }

    private sealed class ValidationTotals
    {
        public readonly HashSet<long> SeenPages = new();
        public long Entries;
        public long LeafPages;
        public long BranchPages;
        public long OverflowPages;
    }
}
