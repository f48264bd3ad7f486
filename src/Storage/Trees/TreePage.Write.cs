using System.Diagnostics;
using System.Runtime.CompilerServices;
using Storage.Paging;

namespace Storage.Trees;

/// <summary>
/// Changes to a tree page. Callers hold the writable pointer from <see cref="ITreePageStore.ModifyPage"/> or a
/// freshly allocated page.
/// </summary>
/// <remarks>
/// The journal stores byte diffs of changed pages, so ordinary inserts and removes touch as few bytes as they can:
/// a node is written into the free gap at Upper and only the tail of the offsets array moves; a removed node's
/// bytes stay behind as a hole. Whole-page rewrites happen only in <see cref="Compact"/> and when splitting.
/// </remarks>
internal readonly unsafe ref partial struct TreePage
{
    /// <summary>Formats <paramref name="page"/> as an empty leaf or branch page.</summary>
    public static TreePage Initialize(byte* page, long pageNumber, PageFlags type, int treeId)
    {
        new Span<byte>(page, PageLayout.PageSizeBytes).Clear();
        return Reset(page, pageNumber, type, treeId);
    }

    /// <summary>
    /// Empties a page that is about to be rebuilt without clearing its bytes: whatever stays in the gap is
    /// never read, and leaving it as it was keeps it out of the journal diff (clearing it would journal
    /// kilobytes of zeros on every split).
    /// </summary>
    public static TreePage Reset(byte* page, long pageNumber, PageFlags type, int treeId)
    {
        Debug.Assert(type is PageFlags.Leaf or PageFlags.Branch, "tree pages are leaves or branches");
        var header = (PageHeader*)page;
        header->PageNumber = pageNumber;
        header->Flags = type;
        header->Lower = PageLayout.HeaderSizeBytes;
        header->Upper = PageLayout.PageSizeBytes;
        header->TreeId = treeId;
        return new TreePage(page, pageNumber);
    }

    /// <summary>Inserts an encoded node at <paramref name="index"/>; the gap must have room for it and its offset.</summary>
    public void InsertNode(int index, byte* node, int nodeSizeBytes)
    {
        byte* destination = ReserveNode(index, nodeSizeBytes);
        Buffer.MemoryCopy(node, destination, nodeSizeBytes, nodeSizeBytes);
    }

    public void InsertBranchNode(int index, ReadOnlySpan<byte> key, long childPageNumber)
    {
        Debug.Assert(IsBranch, "branch nodes go on branch pages");
        int nodeSizeBytes = TreeNodeLayout.BranchNodeSize(key.Length);
        TreeNodeLayout.WriteBranchNode(ReserveNode(index, nodeSizeBytes), key, childPageNumber);
    }

    /// <summary>Drops the node's offset. Its bytes become a hole, unless it is the lowest node, whose room is given straight back.</summary>
    public void RemoveNode(int index)
    {
        int offset = ReadNode(index, out _, out int nodeSizeBytes);
        int count = Count;
        byte* slot = _page + PageLayout.HeaderSizeBytes + index * TreeNodeLayout.SlotSizeBytes;
        int tailBytes = (count - index - 1) * TreeNodeLayout.SlotSizeBytes;
        Buffer.MemoryCopy(slot + TreeNodeLayout.SlotSizeBytes, slot, tailBytes, tailBytes);
        Header->Lower -= TreeNodeLayout.SlotSizeBytes;
        if (offset == Upper)
        {
            Header->Upper = (ushort)(offset + nodeSizeBytes);
        }
    }

    public void SetChild(int index, long childPageNumber)
    {
        Debug.Assert(IsBranch, "only branch nodes have children");
        Debug.Assert(childPageNumber >= TreeNodeLayout.FirstTreePageNumber, "children are tree pages");
        int offset = ReadNode(index, out _, out _);
        Unsafe.WriteUnaligned(_page + offset + sizeof(ushort), childPageNumber);
    }

    /// <summary>
    /// Replaces a leaf node's value in place, keeping its key; the new node must not be larger than the old one.
    /// Only the value bytes (and the header's value field) change, which is the smallest diff a replace can make.
    /// </summary>
    public void OverwriteLeafValue(int index, ReadOnlySpan<byte> inlineValue, long overflowPage)
    {
        Debug.Assert(IsLeaf, "only leaf nodes have values");
        int offset = ReadNode(index, out int keySizeBytes, out int oldNodeSizeBytes);
        bool isOverflow = overflowPage != TreeNodeLayout.NoOverflowPage;
        int newNodeSizeBytes = TreeNodeLayout.LeafNodeSize(keySizeBytes, inlineValue.Length, isOverflow);
        if (newNodeSizeBytes > oldNodeSizeBytes)
        {
            TreeThrowHelper.ThrowNodeDoesNotFit(PageNumber, newNodeSizeBytes, oldNodeSizeBytes);
        }
        byte* node = _page + offset;
        TreeNodeLayout.WriteLeafNode(node, new ReadOnlySpan<byte>(node + LeafNodeHeader.SizeBytes, keySizeBytes), inlineValue, overflowPage);
    }

    /// <summary>Rewrites node data contiguously at the end of the page, in key order, removing holes.</summary>
    [SkipLocalsInit]
    public void Compact()
    {
        byte* copy = stackalloc byte[PageLayout.PageSizeBytes];
        Buffer.MemoryCopy(_page, copy, PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
        var source = new TreePage(copy, PageNumber);

        int count = Count;
        int upper = PageLayout.PageSizeBytes;
        for (int i = 0; i < count; i++)
        {
            byte* node = source.GetNode(i, out int nodeSizeBytes);
            upper -= nodeSizeBytes;
            Buffer.MemoryCopy(node, _page + upper, nodeSizeBytes, nodeSizeBytes);
            Unsafe.WriteUnaligned(_page + PageLayout.HeaderSizeBytes + i * TreeNodeLayout.SlotSizeBytes, (ushort)upper);
        }
        // The gap keeps its old bytes: nothing reads them, and unchanged bytes cost nothing in the journal diff.
        Header->Upper = (ushort)upper;
    }

    /// <summary>Claims room for a node below Upper and an offset at <paramref name="index"/>; returns where to write the node.</summary>
    private byte* ReserveNode(int index, int nodeSizeBytes)
    {
        int count = Count;
        Debug.Assert((uint)index <= (uint)count, "an insert goes between existing nodes or at the end");
        int free = ContiguousFreeBytes;
        if (nodeSizeBytes + TreeNodeLayout.SlotSizeBytes > free)
        {
            TreeThrowHelper.ThrowNodeDoesNotFit(PageNumber, nodeSizeBytes + TreeNodeLayout.SlotSizeBytes, free);
        }
        int upper = Upper - nodeSizeBytes;
        byte* slot = _page + PageLayout.HeaderSizeBytes + index * TreeNodeLayout.SlotSizeBytes;
        int tailBytes = (count - index) * TreeNodeLayout.SlotSizeBytes;
        Buffer.MemoryCopy(slot, slot + TreeNodeLayout.SlotSizeBytes, tailBytes, tailBytes);
        Unsafe.WriteUnaligned(slot, (ushort)upper);
        Header->Lower += TreeNodeLayout.SlotSizeBytes;
        Header->Upper = (ushort)upper;
        return _page + upper;
    }
}
