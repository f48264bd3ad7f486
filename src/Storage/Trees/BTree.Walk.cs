using Storage.Paging;

namespace Storage.Trees;

/// <summary>Whole-tree walks for tools, tests and tree deletion. They recurse at most <see cref="TreeNodeLayout.MaxTreeDepth"/> deep.</summary>
internal sealed unsafe partial class BTree
{
    /// <summary>Calls <paramref name="visitor"/> for every page and overflow run of the tree (see <see cref="TreePageVisitor"/>).</summary>
    public void VisitPages(TreePageVisitor visitor)
    {
        ArgumentNullException.ThrowIfNull(visitor);
        VisitSubtree(_state.RootPage, 0, visitor);
    }

    /// <summary>Counts the entries by reading every leaf; compare with <see cref="TreeState.Entries"/>.</summary>
    public long CountEntriesByWalking()
    {
        long entries = 0;
        VisitPages((_, type, _, count) =>
        {
            if (type == PageFlags.Leaf)
            {
                entries += count;
            }
        });
        return entries;
    }

    /// <summary>
    /// Frees every page of the tree, overflow runs included, when the tree is deleted. The state is reset to
    /// RootPage 0 and Depth 0, and the tree must not be used afterwards.
    /// </summary>
    public void FreeAllPages()
    {
        FreeSubtree(_state.RootPage, 0);
        _state.RootPage = 0;
        _state.Depth = 0;
        _state.Entries = 0;
        _state.BranchPages = 0;
        _state.LeafPages = 0;
        _state.OverflowPages = 0;
        MarkChanged();
    }

    private void VisitSubtree(long pageNumber, int level, TreePageVisitor visitor)
    {
        var page = OpenPageAtLevel(pageNumber, level);
        int count = page.Count;
        visitor(pageNumber, page.Type, level, count);
        for (int i = 0; i < count; i++)
        {
            if (page.IsLeaf)
            {
                var value = page.GetValue(i);
                if (value.IsOverflow)
                {
                    ReadOverflowHeader(value.OverflowPage, out int pageCount);
                    visitor(value.OverflowPage, PageFlags.Overflow, level, pageCount);
                }
            }
            else
            {
                VisitSubtree(page.GetChild(i), level + 1, visitor);
            }
        }
    }

    /// <summary>Children first, then the page itself, so that no freed page is read.</summary>
    private void FreeSubtree(long pageNumber, int level)
    {
        var page = OpenPageAtLevel(pageNumber, level);
        int count = page.Count;
        for (int i = 0; i < count; i++)
        {
            if (page.IsLeaf)
            {
                var value = page.GetValue(i);
                if (value.IsOverflow)
                {
                    FreeOverflow(value.OverflowPage);
                }
            }
            else
            {
                FreeSubtree(page.GetChild(i), level + 1);
            }
        }
        _store.FreePages(pageNumber, 1);
    }
}
