using System.Diagnostics;
using System.Runtime.CompilerServices;
using Storage.Paging;

namespace Storage.Trees;

internal sealed unsafe partial class BTree
{
    /// <summary>Inserts the entry, or replaces the value of an existing key.</summary>
    [SkipLocalsInit]
    public void Put(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        CheckKeySize(key.Length);
        var leaf = DescendToLeaf(key, _path);
        long leafPageNumber = leaf.PageNumber;
        bool isOverflow = value.Length > TreeLimits.MaxInlineValueSizeBytes;
        key = CopyIfInsidePage(key, leaf.Pointer, Workspace.KeyScratch);
        if (!isOverflow)
        {
            value = CopyIfInsidePage(value, leaf.Pointer, Workspace.ValueScratch);
        }

        int index = leaf.SearchLeaf(key, out bool found);
        long oldOverflowPage = found ? leaf.GetValue(index).OverflowPage : TreeNodeLayout.NoOverflowPage;
        int oldNodeSizeBytes = found ? leaf.GetNodeSize(index) : 0;

        // A large value is copied into its new run before anything else changes: the caller's span may be the
        // old run of this very key, which is freed only at the end.
        long newOverflowPage = isOverflow ? WriteOverflow(value, leafPageNumber) : TreeNodeLayout.NoOverflowPage;
        ReadOnlySpan<byte> inlineValue = isOverflow ? default : value;
        int nodeSizeBytes = TreeNodeLayout.LeafNodeSize(key.Length, inlineValue.Length, isOverflow);

        if (found && nodeSizeBytes <= oldNodeSizeBytes)
        {
            ModifyPage(leaf).OverwriteLeafValue(index, inlineValue, newOverflowPage);
        }
        else
        {
            if (found)
            {
                ModifyPage(leaf).RemoveNode(index);
            }
            else
            {
                _state.Entries++;
            }
            byte* node = stackalloc byte[TreeNodeLayout.MaxNodeSizeBytes];
            int encodedSizeBytes = TreeNodeLayout.WriteLeafNode(node, key, inlineValue, newOverflowPage);
            InsertNode(_path.LeafLevel, index, node, encodedSizeBytes, found ? default : leaf);
        }

        if (oldOverflowPage != TreeNodeLayout.NoOverflowPage)
        {
            FreeOverflow(oldOverflowPage);
        }
        MarkChanged();
    }

    /// <summary>
    /// Inserts an encoded node into the page at <paramref name="level"/> of <see cref="_path"/>, compacting or
    /// splitting it when it is full; a split inserts a separator into the parent, and so on up to a new root. A caller
    /// that holds the page at <paramref name="level"/> as this transaction read it passes it as <paramref name="read"/>.
    /// <paramref name="node"/> is a buffer of <see cref="TreeNodeLayout.MaxNodeSizeBytes"/>, reused for the separators.
    /// </summary>
    private void InsertNode(int level, int index, byte* node, int nodeSizeBytes, TreePage read = default)
    {
        while (true)
        {
            long pageNumber = _path.Pages[level];
            var page = read.Pointer != null && read.PageNumber == pageNumber ? read : OpenPage(pageNumber);
            read = default;
            int neededBytes = nodeSizeBytes + TreeNodeLayout.SlotSizeBytes;
            if (page.ContiguousFreeBytes >= neededBytes || FitsOnceCompacted(page, neededBytes, nodeSizeBytes))
            {
                ModifyPage(page).InsertWhereItFits(index, node, nodeSizeBytes);
                return;
            }

            if (TryInsertIntoSibling(level, page, index, node, nodeSizeBytes))
            {
                return;
            }
            long rightPageNumber = SplitAndInsert(level, page, index, node, nodeSizeBytes, out int separatorSizeBytes);
            var separator = new ReadOnlySpan<byte>(Workspace.SeparatorBuffer, 0, separatorSizeBytes);
            if (level == 0)
            {
                GrowRoot(pageNumber, separator, rightPageNumber);
                return;
            }
            // The split is done with the node buffer, so it carries the separator up to the parent.
            nodeSizeBytes = TreeNodeLayout.WriteBranchNode(node, separator, rightPageNumber);
            level--;
            index = _path.Indices[level] + 1;
        }
    }

    /// <summary>
    /// Whether the page holds <paramref name="neededBytes"/> more once its holes are closed, when its gap does not. A page
    /// whose node area holds exactly its count of nodes of the new node's size (same-size entries, no holes) has no
    /// room besides the gap, and its nodes are not read; should nodes of other sizes fill the area exactly around a
    /// hole, the answer is a conservative no (the node then goes to a sibling or a split).
    /// </summary>
    private static bool FitsOnceCompacted(TreePage page, int neededBytes, int nodeSizeBytes) =>
        PageLayout.PageSizeBytes - page.Upper != page.Count * nodeSizeBytes &&
        page.ComputeUsedBytes() + neededBytes <= TreeNodeLayout.UsableBytes;

    /// <summary>The root split: a new root branch over the old root and its new right sibling.</summary>
    private void GrowRoot(long leftPageNumber, ReadOnlySpan<byte> separator, long rightPageNumber)
    {
        var root = AllocatePage(PageFlags.Branch, leftPageNumber);
        root.InsertBranchNode(0, default, leftPageNumber);
        root.InsertBranchNode(1, separator, rightPageNumber);
        _state.RootPage = root.PageNumber;
        _state.Depth++;
        Debug.Assert(_state.Depth <= TreeNodeLayout.MaxTreeDepth, "fan-out of at least 7 keeps real trees far shallower");
    }
}
