using Storage.Paging;

namespace Storage.Trees;

/// <summary>Moving a tree's pages lower in the file, for compaction.</summary>
internal sealed unsafe partial class BTree
{
    /// <summary>
    /// Moves pages and overflow runs that reach <paramref name="ceiling"/> or past it into the lowest free pages below it,
    /// parents before children, until <paramref name="budget"/> pages have moved. A moved page is copied whole under its
    /// new number, its parent (or the tree's root reference) points at the copy, and the old page is freed; the tree's
    /// content and counters do not change. A page stays where it is when no free run below the ceiling can take it.
    /// </summary>
    /// <returns>The pages moved.</returns>
    public int RelocateAbove(long ceiling, int budget)
    {
        if (_state.RootPage == 0 || budget <= 0) return 0;
        var moved = 0;
        if (_state.RootPage >= ceiling)
        {
            var root = MovePage(_state.RootPage, 1, ceiling);
            if (root >= 0)
            {
                _state.RootPage = root;
                moved++;
                MarkChanged();
            }
        }
        RelocateSubtree(_state.RootPage, 0, ceiling, budget, ref moved);
        return moved;
    }

    private void RelocateSubtree(long pageNumber, int level, long ceiling, int budget, ref int moved)
    {
        var page = OpenPageAtLevel(pageNumber, level);
        var count = page.Count;
        for (var i = 0; i < count && moved < budget; i++)
        {
            if (page.IsLeaf)
            {
                var value = page.GetValue(i);
                if (!value.IsOverflow) continue;
                ReadOverflowHeader(value.OverflowPage, out var runPages);
                if (value.OverflowPage + runPages <= ceiling) continue;
                var run = MovePage(value.OverflowPage, runPages, ceiling);
                if (run < 0) continue;
                TreePage.Reopen(_store.ModifyPage(pageNumber), pageNumber).SetOverflowPage(i, run);
                moved += runPages;
                MarkChanged();
                continue;
            }
            var child = page.GetChild(i);
            if (child >= ceiling)
            {
                var copy = MovePage(child, 1, ceiling);
                if (copy >= 0)
                {
                    TreePage.Reopen(_store.ModifyPage(pageNumber), pageNumber).SetChild(i, copy);
                    child = copy;
                    moved++;
                    MarkChanged();
                }
            }
            RelocateSubtree(child, level + 1, ceiling, budget, ref moved);
        }
    }

    /// <summary>Copies the run to the lowest free run below the ceiling and frees it; the new first page, or -1 when none is free.</summary>
    private long MovePage(long pageNumber, int pageCount, long ceiling)
    {
        var target = _store.AllocatePagesBelow(pageCount, ceiling, out var copy);
        if (target < 0) return -1;
        var source = pageCount == 1 ? _store.GetPage(pageNumber) : _store.GetPages(pageNumber, pageCount);
        var bytes = (long)pageCount * PageLayout.PageSizeBytes;
        Buffer.MemoryCopy(source, copy, bytes, bytes);
        ((PageHeader*)copy)->PageNumber = target;
        _store.FreePages(pageNumber, pageCount);
        return target;
    }
}
