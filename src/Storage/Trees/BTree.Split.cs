using System.Diagnostics;
using System.Runtime.CompilerServices;
using Storage.Paging;

namespace Storage.Trees;

/// <summary>Page splits. The page's nodes plus the one being inserted form a "virtual" sequence that is cut in two.</summary>
internal sealed unsafe partial class BTree
{
    /// <summary>
    /// Splits the full page at <paramref name="level"/> into itself and a new right sibling, inserting the node on
    /// the way. Writes the separator for the parent into <see cref="TreeWorkspace.SeparatorBuffer"/>; returns the new page.
    /// </summary>
    [SkipLocalsInit]
    private long SplitAndInsert(int level, TreePage page, int index, byte* node, int nodeSizeBytes, out int separatorSizeBytes)
    {
        bool isLeaf = page.IsLeaf;
        long leftPageNumber = page.PageNumber;

        if (index == page.Count && IsRightmostPath(level))
        {
            // Appending past the last key of the tree (a sequential fill): the full page stays as it is (and costs
            // no diff), the new page starts with just the new node, so sequential fills leave pages ~100% full.
            var newKey = TreeNodeLayout.KeyOfEncodedNode(node, isLeaf);
            var appended = AllocatePage(page.Type, leftPageNumber);
            if (isLeaf)
            {
                appended.InsertNode(0, node, nodeSizeBytes);
                separatorSizeBytes = WriteShortestSeparator(page.GetKey(page.Count - 1), newKey);
            }
            else
            {
                appended.InsertBranchNode(0, default, TreeNodeLayout.ChildOfEncodedNode(node));
                separatorSizeBytes = WriteSeparator(newKey);
            }
            return appended.PageNumber;
        }

        int splitIndex = ChooseSplitIndex(page, index, node, nodeSizeBytes);

        // The right page is built from a copy: the left one changes in place below.
        byte* copy = stackalloc byte[PageLayout.PageSizeBytes];
        Buffer.MemoryCopy(page.Pointer, copy, PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
        var source = TreePage.Open(copy, leftPageNumber);

        var rightFirstKey = VirtualKey(source, index, node, splitIndex);
        separatorSizeBytes = isLeaf
            ? WriteShortestSeparator(VirtualKey(source, index, node, splitIndex - 1), rightFirstKey)
            // A branch's first key moves up: in the right page it becomes the implicit minus infinity.
            : WriteSeparator(rightFirstKey);

        var right = AllocatePage(source.Type, leftPageNumber);
        int virtualCount = source.Count + 1;
        for (int v = splitIndex; v < virtualCount; v++)
        {
            byte* virtualNode = VirtualNode(source, index, node, nodeSizeBytes, v, out int virtualSizeBytes);
            if (v == splitIndex && !isLeaf)
            {
                right.InsertBranchNode(0, default, TreeNodeLayout.ChildOfEncodedNode(virtualNode));
            }
            else
            {
                right.InsertNode(right.Count, virtualNode, virtualSizeBytes);
            }
        }

        // The left page keeps its nodes where they are, except the lowest ones, which move up into the holes the nodes
        // that went right left behind, so that later inserts find the room at Upper. Its journal diff is the header,
        // the offsets and the moved nodes (about a quarter of the page) instead of the whole page rebuilt.
        var left = ModifyPage(leftPageNumber);
        if (index < splitIndex)
        {
            left.TruncateTo(splitIndex - 1);
            // ChooseSplitIndex sized the left side to fit a page once compacted.
            left.InsertWhereItFits(index, node, nodeSizeBytes);
        }
        else
        {
            left.TruncateTo(splitIndex);
        }
        return right.PageNumber;
    }

    /// <summary>
    /// How many virtual nodes stay on the left: the cut nearest the byte middle that leaves both pages within a
    /// page. One always exists: a full page plus a node of at most ~3 KiB can be cut so each side fits.
    /// </summary>
    private int ChooseSplitIndex(TreePage page, int insertIndex, byte* node, int nodeSizeBytes)
    {
        bool isLeaf = page.IsLeaf;
        int virtualCount = page.Count + 1;
        var splitSizes = Workspace.SplitSizes;
        Debug.Assert(virtualCount <= splitSizes.Length, "a page holds at most MaxNodesPerSplit - 1 nodes");
        int totalBytes = VirtualSizes(page, insertIndex, node, nodeSizeBytes);

        int best = -1;
        int bestDifference = int.MaxValue;
        int leftBytes = 0;
        for (int split = 1; split < virtualCount; split++)
        {
            leftBytes += splitSizes[split - 1];
            int rightBytes = totalBytes - leftBytes;
            if (!isLeaf)
            {
                rightBytes -= VirtualKey(page, insertIndex, node, split).Length;
            }
            if (leftBytes > TreeNodeLayout.UsableBytes || rightBytes > TreeNodeLayout.UsableBytes)
            {
                continue;
            }
            int difference = Math.Abs(leftBytes - rightBytes);
            if (difference < bestDifference)
            {
                best = split;
                bestDifference = difference;
            }
        }
        if (best < 0)
        {
            TreeThrowHelper.ThrowNoSplitPoint(page.PageNumber);
        }
        return best;
    }

    /// <summary>True when the path to <paramref name="level"/> took the last child at every branch above it.</summary>
    private bool IsRightmostPath(int level)
    {
        for (int l = 0; l < level; l++)
        {
            if (_path.Indices[l] != OpenPage(_path.Pages[l]).Count - 1)
            {
                return false;
            }
        }
        return true;
    }

    /// <summary>Node <paramref name="virtualIndex"/> of the page with <paramref name="node"/> inserted at <paramref name="insertIndex"/>.</summary>
    private static byte* VirtualNode(TreePage page, int insertIndex, byte* node, int nodeSizeBytes, int virtualIndex, out int sizeBytes)
    {
        if (virtualIndex == insertIndex)
        {
            sizeBytes = nodeSizeBytes;
            return node;
        }
        return page.GetNode(virtualIndex < insertIndex ? virtualIndex : virtualIndex - 1, out sizeBytes);
    }

    private static ReadOnlySpan<byte> VirtualKey(TreePage page, int insertIndex, byte* node, int virtualIndex)
    {
        if (virtualIndex == insertIndex)
        {
            return TreeNodeLayout.KeyOfEncodedNode(node, page.IsLeaf);
        }
        return page.GetKey(virtualIndex < insertIndex ? virtualIndex : virtualIndex - 1);
    }

    private int WriteShortestSeparator(ReadOnlySpan<byte> leftLastKey, ReadOnlySpan<byte> rightFirstKey) =>
        WriteSeparator(rightFirstKey[..ShortestSeparatorLength(leftLastKey, rightFirstKey)]);

    private int WriteSeparator(ReadOnlySpan<byte> separator)
    {
        separator.CopyTo(Workspace.SeparatorBuffer);
        return separator.Length;
    }

    /// <summary>
    /// The length of the shortest prefix of <paramref name="rightFirstKey"/> that is still greater than
    /// <paramref name="leftLastKey"/>: short separators keep branches wide and shallow (a suffix-truncated B+Tree).
    /// </summary>
    internal static int ShortestSeparatorLength(ReadOnlySpan<byte> leftLastKey, ReadOnlySpan<byte> rightFirstKey)
    {
        Debug.Assert(leftLastKey.SequenceCompareTo(rightFirstKey) < 0, "pages hold keys in order");
        // Either the keys first differ at the common prefix length (and the right key is larger there), or the
        // left key is a prefix of the right one; in both cases one more byte than the common prefix is enough.
        return leftLastKey.CommonPrefixLength(rightFirstKey) + 1;
    }
}
