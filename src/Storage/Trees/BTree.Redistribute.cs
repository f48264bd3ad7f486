using System.Runtime.CompilerServices;
using Storage.Paging;

namespace Storage.Trees;

/// <summary>
/// Leaf overflow into a sibling before a split. A full leaf whose left or right sibling (under the same parent) has
/// room hands it nodes from its near end until the two hold about the same bytes, and the parent's separator between
/// them changes; only when neither sibling has room is the leaf split. Random inserts then leave leaves about 85% full
/// instead of the ~69% (ln 2) that splits alone give, so the same data takes about a fifth fewer pages. It costs a
/// sibling and the parent changed per move (about seven moves per hundred random inserts into full-ish leaves), which
/// <see cref="StorageOptions.FillSiblingsBeforeSplit"/> turns off.
/// </summary>
/// <remarks>
/// A sibling takes nodes only when at least <see cref="MinSiblingRoomBytes"/> of it is free: handing over one or two
/// nodes at a time would dirty a sibling on almost every insert into a full leaf. The new separator may be longer than
/// the old one; when the parent cannot hold it without splitting, that sibling is not used. Branches are split as
/// before (they are few, and a branch's first key moving would need the grandparent's separator).
/// </remarks>
internal sealed unsafe partial class BTree
{
    /// <summary>Room a sibling needs before it takes nodes: about four entries of a hundred bytes.</summary>
    internal const int MinSiblingRoomBytes = TreeNodeLayout.UsableBytes / 16;

    /// <summary>
    /// Inserts the node into the full leaf at <paramref name="level"/> by moving nodes into a sibling; false, changing
    /// nothing, when neither sibling has room (or the parent cannot take the new separator).
    /// </summary>
    private bool TryInsertIntoSibling(int level, TreePage page, int index, byte* node, int nodeSizeBytes)
    {
        if (level == 0 || !page.IsLeaf || !Workspace.FillSiblingsBeforeSplit) return false;
        // Appending past the tree's last key (a sequential fill) leaves the full page as it is: the split does that.
        if (index == page.Count && IsRightmostPath(level)) return false;
        int parentLevel = level - 1;
        int childIndex = _path.Indices[parentLevel];
        var parent = OpenPage(_path.Pages[parentLevel]);

        int leftRoom = -1, rightRoom = -1;
        long leftSibling = 0, rightSibling = 0;
        if (childIndex > 0)
        {
            leftSibling = parent.GetChild(childIndex - 1);
            leftRoom = RoomOfSibling(leftSibling, page.PageNumber, nodeSizeBytes);
        }
        if (childIndex + 1 < parent.Count)
        {
            rightSibling = parent.GetChild(childIndex + 1);
            rightRoom = RoomOfSibling(rightSibling, page.PageNumber, nodeSizeBytes);
        }
        // The sibling with more room first: it takes more, and is full again later.
        bool rightFirst = rightRoom >= leftRoom;
        for (int attempt = 0; attempt < 2; attempt++)
        {
            bool right = rightFirst == (attempt == 0);
            int room = right ? rightRoom : leftRoom;
            if (room < MinSiblingRoomBytes) continue;
            if (TryMove(parentLevel, childIndex, page, index, node, nodeSizeBytes, right ? rightSibling : leftSibling, room, toRight: right))
            {
                return true;
            }
        }
        return false;
    }

    /// <summary>
    /// Free bytes of a sibling leaf (once compacted). When its node area holds exactly its count of nodes of the new
    /// node's size (a tree of same-size entries, without holes) the gap is all its room, and the header says so: the
    /// rest of the sibling, most often not cached and most often not the one used, is not read. Otherwise the node sizes
    /// are summed. (Should nodes of other sizes fill the area exactly around a hole, the gap counts the room short,
    /// which only makes the move hand over fewer nodes.)
    /// </summary>
    private int RoomOfSibling(long siblingPageNumber, long pageNumber, int nodeSizeBytes)
    {
        var sibling = OpenPage(siblingPageNumber);
        if (!sibling.IsLeaf) TreeThrowHelper.ThrowSiblingTypeMismatch(siblingPageNumber, pageNumber);
        if (PageLayout.PageSizeBytes - sibling.Upper == sibling.Count * nodeSizeBytes) return sibling.ContiguousFreeBytes;
        return TreeNodeLayout.UsableBytes - sibling.ComputeUsedBytes();
    }

    /// <summary>
    /// Moves virtual nodes (the page's nodes with the new one inserted) into the sibling: the last ones to the front of
    /// the right sibling, or the first ones to the end of the left sibling, as many as bring the two closest to equal.
    /// </summary>
    private bool TryMove(int parentLevel, int childIndex, TreePage page, int index, byte* node, int nodeSizeBytes, long siblingPageNumber, int siblingRoom, bool toRight)
    {
        int virtualCount = page.Count + 1;
        int total = VirtualSizes(page, index, node, nodeSizeBytes);
        // Virtual nodes [0, cut) end up on the left page of the pair, [cut, count) on the right one.
        int cut = ChooseCut(virtualCount, total, TreeNodeLayout.UsableBytes - siblingRoom, toRight);
        if (cut < 0) return false;

        // The page is read (keys, moved nodes) before anything changes it, so no copy of it is needed.
        // The separator between the pair is the right page's key in the parent.
        if (!TryReplaceSeparator(parentLevel, toRight ? childIndex + 1 : childIndex, VirtualKey(page, index, node, cut - 1), VirtualKey(page, index, node, cut)))
        {
            return false;
        }

        int from = toRight ? cut : 0, to = toRight ? virtualCount : cut;
        var sizes = Workspace.SplitSizes;
        int movedBytes = 0;
        for (int v = from; v < to; v++) movedBytes += sizes[v];
        var sibling = ModifyPage(siblingPageNumber);
        MakeGap(sibling, movedBytes);
        int at = toRight ? 0 : sibling.Count;
        for (int v = from; v < to; v++)
        {
            byte* virtualNode = VirtualNode(page, index, node, nodeSizeBytes, v, out int virtualSizeBytes);
            sibling.InsertNode(at++, virtualNode, virtualSizeBytes);
        }

        var rest = ModifyPage(page);
        bool newNodeMoved = toRight ? index >= cut : index < cut;
        int ownMoved = to - from - (newNodeMoved ? 1 : 0);
        if (toRight) rest.TruncateTo(rest.Count - ownMoved);
        else rest.RemoveFirst(ownMoved);
        if (!newNodeMoved) rest.InsertWhereItFits(toRight ? index : index - cut, node, nodeSizeBytes);
        return true;
    }

    /// <summary>
    /// The cut (virtual nodes [0, cut) on the left page) that leaves the page and its sibling closest to equal, both
    /// within a page, with at least one node moved; -1 when there is none.
    /// </summary>
    private int ChooseCut(int virtualCount, int total, int siblingUsed, bool toRight)
    {
        var sizes = Workspace.SplitSizes;
        int best = -1, bestDifference = int.MaxValue, moved = 0;
        for (int step = 1; step < virtualCount; step++)
        {
            int cut = toRight ? virtualCount - step : step;
            moved += sizes[toRight ? cut : cut - 1];
            int stay = total - moved;
            if (siblingUsed + moved > TreeNodeLayout.UsableBytes) break;
            if (stay > TreeNodeLayout.UsableBytes) continue;
            int difference = Math.Abs(stay - (siblingUsed + moved));
            if (difference < bestDifference)
            {
                best = cut;
                bestDifference = difference;
            }
        }
        return best;
    }

    /// <summary>Fills <see cref="TreeWorkspace.SplitSizes"/> with the virtual nodes' sizes (with their offsets); returns their total.</summary>
    private int VirtualSizes(TreePage page, int index, byte* node, int nodeSizeBytes)
    {
        var sizes = Workspace.SplitSizes;
        int virtualCount = page.Count + 1;
        int total = 0;
        for (int v = 0; v < virtualCount; v++)
        {
            VirtualNode(page, index, node, nodeSizeBytes, v, out int sizeBytes);
            sizes[v] = sizeBytes + TreeNodeLayout.SlotSizeBytes;
            total += sizes[v];
        }
        return total;
    }

    /// <summary>
    /// Makes the gap at Upper hold <paramref name="bytes"/> more: first by moving the lowest nodes into holes (a small
    /// diff), then, if that is not enough, by compacting.
    /// </summary>
    private static void MakeGap(TreePage page, int bytes)
    {
        if (page.ContiguousFreeBytes >= bytes) return;
        page.CloseHoles();
        if (page.ContiguousFreeBytes < bytes) page.Compact();
    }

    /// <summary>
    /// Replaces the key of the parent's node <paramref name="parentIndex"/> (at least 1) with the shortest separator
    /// between the two keys; false, changing nothing, when the parent cannot hold it.
    /// </summary>
    [SkipLocalsInit]
    private bool TryReplaceSeparator(int parentLevel, int parentIndex, ReadOnlySpan<byte> leftLastKey, ReadOnlySpan<byte> rightFirstKey)
    {
        int separatorSizeBytes = WriteShortestSeparator(leftLastKey, rightFirstKey);
        var separator = new ReadOnlySpan<byte>(Workspace.SeparatorBuffer, 0, separatorSizeBytes);
        long parentPageNumber = _path.Pages[parentLevel];
        var parent = OpenPage(parentPageNumber);
        int oldSizeBytes = parent.GetNodeSize(parentIndex);
        int newSizeBytes = TreeNodeLayout.BranchNodeSize(separatorSizeBytes);
        if (newSizeBytes > oldSizeBytes && parent.ComputeUsedBytes() - oldSizeBytes + newSizeBytes > TreeNodeLayout.UsableBytes)
        {
            return false;
        }
        var writable = ModifyPage(parentPageNumber);
        // Usually the new separator is no longer than the old one and takes its place: only its bytes change.
        if (writable.TryReplaceBranchKeyInPlace(parentIndex, separator)) return true;
        long child = writable.GetChild(parentIndex);
        byte* branchNode = stackalloc byte[TreeNodeLayout.MaxBranchNodeSizeBytes];
        TreeNodeLayout.WriteBranchNode(branchNode, separator, child);
        writable.RemoveNode(parentIndex);
        // The replaced nodes leave holes in the branch; once the gap is used up the holes are closed in one go, so
        // that the next replacements find the room at the gap again (looking for a hole each time costs a sort).
        MakeGap(writable, newSizeBytes + TreeNodeLayout.SlotSizeBytes);
        writable.InsertNode(parentIndex, branchNode, newSizeBytes);
        return true;
    }
}
