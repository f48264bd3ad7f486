using System.Diagnostics;

namespace Storage.Trees;

/// <summary>
/// Deletes and the rebalancing after them.
/// </summary>
/// <remarks>
/// Policy: a page left empty is always removed from its parent. A page below
/// <see cref="TreeNodeLayout.UnderfullThresholdBytes"/> (a quarter of a page) is merged with its left sibling, or
/// else its right sibling, when both have the same parent and the merged content fits one page; otherwise it is
/// left as it is. Nodes are never moved between siblings: moving them changes the parent's separator, which can
/// grow and would make a delete split the parent. A merge always keeps the left page (the right one's nodes are
/// appended, a small diff) and frees the right one. The parent is then checked in turn, and a root branch left
/// with one child is replaced by that child (Depth--). An empty tree keeps one empty root leaf.
/// </remarks>
internal sealed unsafe partial class BTree
{
    /// <summary>Deletes the key; false when it is not in the tree.</summary>
    public bool Delete(ReadOnlySpan<byte> key)
    {
        CheckKeySize(key.Length);
        var leaf = DescendToLeaf(key, _path);
        int index = leaf.SearchLeaf(key, out bool found);
        if (!found)
        {
            return false;
        }
        long overflowPage = leaf.GetValue(index).OverflowPage;
        ModifyPage(leaf).RemoveNode(index);
        if (overflowPage != TreeNodeLayout.NoOverflowPage)
        {
            FreeOverflow(overflowPage);
        }
        _state.Entries--;
        Rebalance(_path.LeafLevel);
        MarkChanged();
        return true;
    }

    /// <summary>Removes or merges under-full pages from <paramref name="level"/> of <see cref="_path"/> upwards.</summary>
    private void Rebalance(int level)
    {
        for (; level > 0; level--)
        {
            long pageNumber = _path.Pages[level];
            var page = OpenPage(pageNumber);
            if (page.Count == 0)
            {
                FreePage(pageNumber, page.IsLeaf);
                RemoveChild(level - 1, _path.Indices[level - 1]);
                continue;
            }
            if (page.ComputeUsedBytes() >= TreeNodeLayout.UnderfullThresholdBytes || !TryMergeWithSibling(level))
            {
                break;
            }
        }
        CollapseRoot();
    }

    private bool TryMergeWithSibling(int level)
    {
        int parentLevel = level - 1;
        int index = _path.Indices[parentLevel];
        var parent = OpenPage(_path.Pages[parentLevel]);
        if (index > 0 && TryMerge(level, parent.GetChild(index - 1), _path.Pages[level], index))
        {
            return true;
        }
        parent = OpenPage(_path.Pages[parentLevel]);
        return index + 1 < parent.Count && TryMerge(level, _path.Pages[level], parent.GetChild(index + 1), index + 1);
    }

    /// <summary>
    /// Moves all of the right page's nodes to the end of the left page when they fit, and frees the right page.
    /// <paramref name="rightIndex"/> is the right page's index in the parent (at least 1).
    /// </summary>
    private bool TryMerge(int level, long leftPageNumber, long rightPageNumber, int rightIndex)
    {
        Debug.Assert(rightIndex >= 1, "the right page of a pair has a left sibling in the same parent");
        var left = OpenPage(leftPageNumber);
        var right = OpenPage(rightPageNumber);
        if (left.Type != right.Type)
        {
            TreeThrowHelper.ThrowSiblingTypeMismatch(leftPageNumber, rightPageNumber);
        }
        bool isLeaf = left.IsLeaf;

        // A branch's first node has no key; merged behind the left page's nodes it needs the parent's separator.
        int separatorSizeBytes = 0;
        if (!isLeaf)
        {
            separatorSizeBytes = WriteSeparator(OpenPage(_path.Pages[level - 1]).GetKey(rightIndex));
        }
        int mergedBytes = left.ComputeUsedBytes() + right.ComputeUsedBytes() + separatorSizeBytes;
        if (mergedBytes > TreeNodeLayout.UsableBytes)
        {
            return false;
        }

        var target = ModifyPage(leftPageNumber);
        if (target.ContiguousFreeBytes < mergedBytes - target.ComputeUsedBytes())
        {
            target.Compact();
        }
        int count = right.Count;
        for (int i = 0; i < count; i++)
        {
            if (i == 0 && !isLeaf)
            {
                target.InsertBranchNode(target.Count, new ReadOnlySpan<byte>(Workspace.SeparatorBuffer, 0, separatorSizeBytes), right.GetChild(0));
                continue;
            }
            byte* node = right.GetNode(i, out int nodeSizeBytes);
            target.InsertNode(target.Count, node, nodeSizeBytes);
        }
        FreePage(rightPageNumber, isLeaf);
        RemoveChild(level - 1, rightIndex);
        return true;
    }

    /// <summary>Removes child <paramref name="index"/> from the branch at <paramref name="level"/> of <see cref="_path"/>.</summary>
    private void RemoveChild(int level, int index)
    {
        var branch = ModifyPage(_path.Pages[level]);
        if (index == 0 && branch.Count > 1)
        {
            // Node 0 has no key (minus infinity): the next child takes its place and that node's key is dropped;
            // the next child's keys are all above the branch's own lower bound, so the ranges stay right.
            branch.SetChild(0, branch.GetChild(1));
            branch.RemoveNode(1);
            return;
        }
        branch.RemoveNode(index);
    }

    /// <summary>Replaces a root branch that has a single child by that child.</summary>
    private void CollapseRoot()
    {
        while (_state.Depth > 1)
        {
            long rootPageNumber = _state.RootPage;
            var root = OpenPage(rootPageNumber);
            if (!root.IsBranch)
            {
                TreeThrowHelper.ThrowUnbalanced(rootPageNumber, 0, _state.Depth);
            }
            if (root.Count > 1)
            {
                return;
            }
            if (root.Count == 0)
            {
                // The root loses at most one child per delete and is collapsed when it has one left, so this is damage.
                TreeThrowHelper.ThrowEmptyBranch(rootPageNumber);
            }
            _state.RootPage = root.GetChild(0);
            _state.Depth--;
            FreePage(rootPageNumber, isLeaf: false);
        }
    }
}
