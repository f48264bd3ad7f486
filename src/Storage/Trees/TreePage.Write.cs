using System.Diagnostics;
using System.Runtime.CompilerServices;
using Storage.Commit;
using Storage.Paging;

namespace Storage.Trees;

/// <summary>
/// Changes to a tree page. Callers hold the writable pointer from <see cref="ITreePageStore.ModifyPage(long, out ulong*)"/>
/// or a freshly allocated page.
/// </summary>
/// <remarks>
/// The journal stores byte diffs of changed pages, so ordinary inserts and removes touch as few bytes as they can:
/// a node is written into the free gap at Upper and only the tail of the slot array moves; a removed node's
/// bytes stay behind as a hole, and a later insert may fill it (<see cref="TryInsertIntoHole"/>). A split keeps the
/// left page's nodes in place but the lowest, which move up into its holes (<see cref="TruncateTo"/>, <see cref="CloseHoles"/>);
/// whole-page rewrites happen only in <see cref="Compact"/>, when no hole can take a node. Every write records the
/// bytes it changed (<see cref="Written"/>), so that the commit compares only those with the page's previous version.
/// </remarks>
internal readonly unsafe ref partial struct TreePage
{
    /// <summary>Records that bytes [<paramref name="offset"/>, <paramref name="offset"/> + <paramref name="length"/>) changed.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Written(int offset, int length)
    {
        if (_writtenLines != null) WrittenLines.Mark(_writtenLines, offset, length);
    }

    private void HeaderWritten() => Written(0, PageLayout.HeaderSizeBytes);

    private static int SlotOffset(int index) => PageLayout.HeaderSizeBytes + index * TreeNodeLayout.SlotSizeBytes;

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
        header->OverflowSizeBytes = 0; // the key prefix shares these bytes; a reused page may have been an overflow run
        return new TreePage(page, pageNumber);
    }

    /// <summary>Inserts an encoded node at <paramref name="index"/>; the gap must have room for it and its offset.</summary>
    public void InsertNode(int index, byte* node, int nodeSizeBytes)
    {
        byte* destination = ReserveNode(index, nodeSizeBytes);
        Buffer.MemoryCopy(node, destination, nodeSizeBytes, nodeSizeBytes);
        KeyPlaced(index, inserted: true);
    }

    public void InsertBranchNode(int index, ReadOnlySpan<byte> key, long childPageNumber)
    {
        Debug.Assert(IsBranch, "branch nodes go on branch pages");
        int nodeSizeBytes = TreeNodeLayout.BranchNodeSize(key.Length);
        TreeNodeLayout.WriteBranchNode(ReserveNode(index, nodeSizeBytes), key, childPageNumber);
        KeyPlaced(index, inserted: true);
    }

    /// <summary>Drops the node's offset. Its bytes become a hole, unless it is the lowest node, whose room is given straight back.</summary>
    public void RemoveNode(int index)
    {
        int offset = ReadNode(index, out _, out int nodeSizeBytes);
        int count = Count;
        byte* slot = _page + SlotOffset(index);
        int tailBytes = (count - index - 1) * TreeNodeLayout.SlotSizeBytes;
        Buffer.MemoryCopy(slot + TreeNodeLayout.SlotSizeBytes, slot, tailBytes, tailBytes);
        Written(SlotOffset(index), tailBytes);
        HeaderWritten();
        Header->Lower -= TreeNodeLayout.SlotSizeBytes;
        if (offset == Upper)
        {
            Header->Upper = (ushort)(offset + nodeSizeBytes);
        }
    }

    /// <summary>
    /// Gives branch node <paramref name="index"/> a new key in place, keeping its child, when the node does not grow
    /// (what a shorter key leaves of the old node becomes a small hole); false, changing nothing, when it would.
    /// </summary>
    public bool TryReplaceBranchKeyInPlace(int index, ReadOnlySpan<byte> key)
    {
        Debug.Assert(IsBranch, "branch nodes have separator keys");
        int offset = ReadNode(index, out _, out int nodeSizeBytes);
        if (TreeNodeLayout.BranchNodeSize(key.Length) > nodeSizeBytes) return false;
        var child = Unsafe.ReadUnaligned<BranchNodeHeader>(_page + offset).ChildPageNumber;
        Written(offset, nodeSizeBytes);
        TreeNodeLayout.WriteBranchNode(_page + offset, key, child);
        KeyPlaced(index, inserted: false);
        return true;
    }

    public void SetChild(int index, long childPageNumber)
    {
        Debug.Assert(IsBranch, "only branch nodes have children");
        Debug.Assert(childPageNumber >= TreeNodeLayout.FirstTreePageNumber, "children are tree pages");
        int offset = ReadNode(index, out _, out _);
        Written(offset + sizeof(ushort), sizeof(long));
        Unsafe.WriteUnaligned(_page + offset + sizeof(ushort), childPageNumber);
    }

    /// <summary>Points a leaf node whose value lives in an overflow run at another run (the run moved).</summary>
    public void SetOverflowPage(int index, long overflowPage)
    {
        Debug.Assert(IsLeaf, "only leaf nodes have values");
        Debug.Assert(overflowPage >= TreeNodeLayout.FirstTreePageNumber, "runs are tree pages");
        int offset = ReadNode(index, out int keySizeBytes, out _);
        Debug.Assert(Unsafe.ReadUnaligned<LeafNodeHeader>(_page + offset).IsOverflow, "the value is in an overflow run");
        Written(offset + LeafNodeHeader.SizeBytes + keySizeBytes, sizeof(long));
        Unsafe.WriteUnaligned(_page + offset + LeafNodeHeader.SizeBytes + keySizeBytes, overflowPage);
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
        Written(offset, oldNodeSizeBytes);
        TreeNodeLayout.WriteLeafNode(node, new ReadOnlySpan<byte>(node + LeafNodeHeader.SizeBytes, keySizeBytes), inlineValue, overflowPage);
    }

    /// <summary>Rewrites node data contiguously at the end of the page, in key order, removing holes.</summary>
    [SkipLocalsInit]
    public void Compact()
    {
        byte* copy = stackalloc byte[PageLayout.PageSizeBytes];
        Buffer.MemoryCopy(_page, copy, PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
        var source = new TreePage(copy, PageNumber);
        Written(0, PageLayout.PageSizeBytes);

        int count = Count;
        int upper = PageLayout.PageSizeBytes;
        for (int i = 0; i < count; i++)
        {
            byte* node = source.GetNode(i, out int nodeSizeBytes);
            upper -= nodeSizeBytes;
            Buffer.MemoryCopy(node, _page + upper, nodeSizeBytes, nodeSizeBytes);
            SetOffset(i, upper);
        }
        // The gap keeps its old bytes: nothing reads them, and unchanged bytes cost nothing in the journal diff.
        Header->Upper = (ushort)upper;
    }

    /// <summary>
    /// Keeps the first <paramref name="count"/> nodes and drops the rest (a split's left page): the kept nodes stay
    /// where they are but the lowest, which move up into the dropped nodes' room (<see cref="CloseHoles"/>).
    /// </summary>
    public void TruncateTo(int count)
    {
        Debug.Assert((uint)count <= (uint)Count, "a page is truncated to fewer nodes");
        // Upper stays at or below every kept node, so the page is valid until CloseHoles raises it.
        HeaderWritten();
        Header->Lower = (ushort)(PageLayout.HeaderSizeBytes + count * TreeNodeLayout.SlotSizeBytes);
        CloseHoles();
        RecomputeKeyPrefix();
    }

    /// <summary>
    /// Drops the first <paramref name="count"/> nodes (nodes handed to a left sibling); the rest close the holes they
    /// leave, as after <see cref="TruncateTo"/>.
    /// </summary>
    public void RemoveFirst(int count)
    {
        Debug.Assert((uint)count <= (uint)Count, "a page drops at most its nodes");
        byte* slots = _page + PageLayout.HeaderSizeBytes;
        int keptBytes = (Count - count) * TreeNodeLayout.SlotSizeBytes;
        Buffer.MemoryCopy(slots + count * TreeNodeLayout.SlotSizeBytes, slots, keptBytes, keptBytes);
        Written(PageLayout.HeaderSizeBytes, keptBytes);
        HeaderWritten();
        Header->Lower = (ushort)(PageLayout.HeaderSizeBytes + keptBytes);
        CloseHoles();
        RecomputeKeyPrefix();
    }

    /// <summary>
    /// Inserts a node at <paramref name="index"/> where it fits: into the gap at Upper, else into a hole
    /// (<see cref="TryInsertIntoHole"/>), else after compacting. The caller knows it fits the page once compacted.
    /// </summary>
    public void InsertWhereItFits(int index, byte* node, int nodeSizeBytes)
    {
        bool gapFits = ContiguousFreeBytes >= nodeSizeBytes + TreeNodeLayout.SlotSizeBytes;
        if (!gapFits && TryInsertIntoHole(index, node, nodeSizeBytes)) return;
        if (!gapFits) Compact();
        InsertNode(index, node, nodeSizeBytes);
    }

    /// <summary>
    /// Moves the lowest nodes into holes higher up, each into the highest hole above it that holds it, until no hole
    /// lies above the lowest node: the gap at Upper then holds the page's free room (all of it when the nodes are of
    /// one size) while only the moved nodes' bytes and offsets change, instead of the whole page as when compacting.
    /// </summary>
    [SkipLocalsInit]
    public void CloseHoles()
    {
        int count = Count;
        HeaderWritten();
        if (count == 0)
        {
            Header->Upper = PageLayout.PageSizeBytes;
            return;
        }
        if (count > TreeNodeLayout.MaxNodesPerSplit) return;
        Span<int> nodes = stackalloc int[count];
        Span<short> sizes = stackalloc short[count];
        Span<int> holeStarts = stackalloc int[count + 1];
        Span<int> holeLengths = stackalloc int[count + 1];
        int holes = MapNodesAndHoles(nodes, sizes, holeStarts, holeLengths);

        int bottom = 0;
        int lowestMovedTo = PageLayout.PageSizeBytes;
        for (; bottom < count; bottom++)
        {
            int offset = nodes[bottom] >> 16;
            int slot = nodes[bottom] & 0xFFFF;
            int sizeBytes = sizes[slot];
            int target = -1;
            for (int h = holes - 1; h >= 0 && holeStarts[h] > offset; h--)
            {
                if (holeLengths[h] >= sizeBytes)
                {
                    target = h;
                    break;
                }
            }
            if (target < 0) break;
            // The node goes to the top of the hole, so that what is left of the hole stays next to the gap's side.
            int to = holeStarts[target] + holeLengths[target] - sizeBytes;
            holeLengths[target] -= sizeBytes;
            MoveNode(slot, offset, to, sizeBytes);
            lowestMovedTo = Math.Min(lowestMovedTo, to);
        }
        int upper = bottom < count ? nodes[bottom] >> 16 : PageLayout.PageSizeBytes;
        Header->Upper = (ushort)Math.Min(upper, lowestMovedTo);
    }

    /// <summary>
    /// Inserts a node at <paramref name="index"/> without compacting, when the gap at Upper is too small for it: the
    /// node goes into the smallest hole between nodes that holds it, and when the gap has no room left even for its
    /// offset, the lowest nodes move into holes higher up so that the gap grows. Only the bytes moved change (compacting
    /// would rewrite the whole page, and the journal would carry all of it). Returns false, changing nothing, when the
    /// holes cannot take them.
    /// </summary>
    [SkipLocalsInit]
    public bool TryInsertIntoHole(int index, byte* node, int nodeSizeBytes)
    {
        int count = Count;
        if (count > TreeNodeLayout.MaxNodesPerSplit) return false;
        Span<int> nodes = stackalloc int[count];
        Span<short> sizes = stackalloc short[count];
        Span<int> holeStarts = stackalloc int[count + 1];
        Span<int> holeLengths = stackalloc int[count + 1];
        int holes = MapNodesAndHoles(nodes, sizes, holeStarts, holeLengths);
        int lowest = count > 0 ? nodes[0] >> 16 : PageLayout.PageSizeBytes;

        // Plan first, change nothing until the plan works: the lowest nodes move into holes above them until the gap
        // holds the new offset, and the new node fits either the gap or a hole above it. A node moves only past the
        // next node, so every move raises the bottom of the node area.
        int lower = Lower;
        int upper = lowest;
        int moved = 0;
        int lowestMovedTo = PageLayout.PageSizeBytes;
        int nodeHole = -1;
        while (true)
        {
            if (upper - lower >= nodeSizeBytes + TreeNodeLayout.SlotSizeBytes) break;
            if (upper - lower >= TreeNodeLayout.SlotSizeBytes && (nodeHole = BestHole(holeStarts[..holes], holeLengths[..holes], nodeSizeBytes, upper)) >= 0) break;
            if (moved == count) return false;
            int slot = nodes[moved] & 0xFFFF;
            int sizeBytes = sizes[slot];
            int above = moved + 1 < count ? nodes[moved + 1] >> 16 : (nodes[moved] >> 16) + sizeBytes;
            int target = BestHole(holeStarts[..holes], holeLengths[..holes], sizeBytes, above);
            if (target < 0) return false;
            int to = holeStarts[target];
            holeStarts[target] += sizeBytes;
            holeLengths[target] -= sizeBytes;
            nodes[moved] = (to << 16) | slot;
            lowestMovedTo = Math.Min(lowestMovedTo, to);
            moved++;
            upper = Math.Min(moved < count ? nodes[moved] >> 16 : PageLayout.PageSizeBytes, lowestMovedTo);
        }

        for (int m = 0; m < moved; m++)
        {
            int slot = nodes[m] & 0xFFFF;
            MoveNode(slot, ReadNode(slot, out _, out _), nodes[m] >> 16, sizes[slot]);
        }
        HeaderWritten();
        Header->Upper = (ushort)upper;
        if (nodeHole < 0)
        {
            InsertNode(index, node, nodeSizeBytes);
            return true;
        }
        int at = holeStarts[nodeHole];
        InsertOffset(index, at);
        Written(at, nodeSizeBytes);
        Buffer.MemoryCopy(node, _page + at, nodeSizeBytes, nodeSizeBytes);
        KeyPlaced(index, inserted: true);
        return true;
    }

    /// <summary>
    /// Fills <paramref name="nodes"/> with every node as (offset &lt;&lt; 16 | slot), sorted by offset, and
    /// <paramref name="sizes"/> by slot; then the holes between the lowest node and the page's end, as (start, length)
    /// in offset order (the room below the lowest node belongs to the gap). Returns the number of holes.
    /// </summary>
    private int MapNodesAndHoles(Span<int> nodes, Span<short> sizes, Span<int> holeStarts, Span<int> holeLengths)
    {
        int count = nodes.Length;
        for (int i = 0; i < count; i++)
        {
            int offset = ReadNode(i, out _, out int sizeBytes);
            nodes[i] = (offset << 16) | i;
            sizes[i] = (short)sizeBytes;
        }
        SortByOffset(nodes);
        int holes = 0;
        int covered = count > 0 ? nodes[0] >> 16 : PageLayout.PageSizeBytes;
        for (int i = 0; i <= count; i++)
        {
            int start = i < count ? nodes[i] >> 16 : PageLayout.PageSizeBytes;
            if (start > covered)
            {
                holeStarts[holes] = covered;
                holeLengths[holes] = start - covered;
                holes++;
            }
            if (i < count) covered = Math.Max(covered, start + sizes[nodes[i] & 0xFFFF]);
        }
        return holes;
    }

    /// <summary>
    /// Sorts (offset &lt;&lt; 16 | slot) values by offset, a 13-bit number, keeping the order of equal offsets (values listed
    /// by slot come out as a general sort orders them): two counting passes (7 bits, then 6), without the comparisons of a
    /// general sort, whose mispredicted branches made it a few percent of a random-insert commit.
    /// </summary>
    [SkipLocalsInit]
    internal static void SortByOffset(Span<int> nodes)
    {
        Debug.Assert(PageLayout.PageSizeBytes <= 1 << 13, "offsets fit 13 bits");
        if (nodes.Length < 2) return;
        Span<int> other = nodes.Length <= TreeNodeLayout.MaxNodesPerSplit ? stackalloc int[nodes.Length] : new int[nodes.Length];
        Span<int> counts = stackalloc int[128];
        CountingPass(nodes, other, counts, shift: 16, bits: 7);
        CountingPass(other, nodes, counts, shift: 23, bits: 6);

        static void CountingPass(ReadOnlySpan<int> from, Span<int> to, Span<int> counts, int shift, int bits)
        {
            int buckets = 1 << bits, mask = buckets - 1;
            counts[..buckets].Clear();
            foreach (var value in from) counts[(value >> shift) & mask]++;
            for (int b = 0, start = 0; b < buckets; b++)
            {
                int count = counts[b];
                counts[b] = start;
                start += count;
            }
            foreach (var value in from) to[counts[(value >> shift) & mask]++] = value;
        }
    }

    /// <summary>The smallest hole starting at or above <paramref name="minStart"/> that holds <paramref name="sizeBytes"/>, or -1.</summary>
    private static int BestHole(ReadOnlySpan<int> starts, ReadOnlySpan<int> lengths, int sizeBytes, int minStart)
    {
        int best = -1;
        for (int h = 0; h < starts.Length; h++)
        {
            if (lengths[h] >= sizeBytes && starts[h] >= minStart && (best < 0 || lengths[h] < lengths[best])) best = h;
        }
        return best;
    }

    /// <summary>Moves node <paramref name="slot"/> from <paramref name="from"/> to <paramref name="to"/> and points its offset there.</summary>
    private void MoveNode(int slot, int from, int to, int sizeBytes)
    {
        Buffer.MemoryCopy(_page + from, _page + to, sizeBytes, sizeBytes);
        Written(to, sizeBytes);
        SetOffset(slot, to);
        Written(SlotOffset(slot), TreeNodeLayout.SlotSizeBytes);
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
        InsertOffset(index, upper);
        Header->Upper = (ushort)upper;
        Written(upper, nodeSizeBytes);
        return _page + upper;
    }

    /// <summary>
    /// Keeps the shared prefix and key heads right once node <paramref name="index"/> has its key (a node inserted there, or
    /// a branch node's key replaced): only a key at either end of the page can share less of the prefix than the rest
    /// (one between two keys shares whatever they share), and then every head is rewritten for the shorter prefix.
    /// </summary>
    private void KeyPlaced(int index, bool inserted)
    {
        int first = FirstKeyedIndex;
        int count = Count;
        if (index < first)
        {
            // A node put before a branch's node 0 pushes that node's key into the search: rare, so done the long way.
            if (inserted && count > first) RecomputeKeyPrefix();
            return;
        }
        var key = GetKey(index);
        if (count == first + 1)
        {
            SetKeyPrefix(key.Length * 8);
            WriteHead(index, TreeNodeLayout.KeyHead(key, key.Length * 8));
            return;
        }
        int prefixBits = KeyPrefixBits;
        if (index == first || index == count - 1)
        {
            int shared = TreeNodeLayout.CommonPrefixBits(key, GetKey(index == first ? index + 1 : index - 1));
            if (shared < prefixBits)
            {
                RewriteHeads(shared);
                return;
            }
        }
        WriteHead(index, TreeNodeLayout.KeyHead(key, prefixBits));
    }

    /// <summary>Sets the shared prefix to what the page's first and last keys share, rewriting the heads when it changes.</summary>
    private void RecomputeKeyPrefix()
    {
        int first = FirstKeyedIndex;
        int count = Count;
        if (count <= first) return;
        int shared = TreeNodeLayout.CommonPrefixBits(GetKey(first), GetKey(count - 1));
        if (shared != KeyPrefixBits) RewriteHeads(shared);
    }

    private void RewriteHeads(int prefixBits)
    {
        SetKeyPrefix(prefixBits);
        int count = Count;
        for (int i = FirstKeyedIndex; i < count; i++)
        {
            WriteHead(i, TreeNodeLayout.KeyHead(GetKey(i), prefixBits));
        }
    }

    private void SetKeyPrefix(int prefixBits)
    {
        Debug.Assert(prefixBits <= TreeNodeLayout.MaxKeyPrefixBits, "a prefix shared by keys is no longer than a key");
        if (Header->KeyPrefixBits == prefixBits) return;
        HeaderWritten();
        Header->KeyPrefixBits = (ushort)prefixBits;
    }

    /// <summary>Writes slot <paramref name="index"/>'s key head, keeping its offset.</summary>
    private void WriteHead(int index, uint head)
    {
        byte* slot = _page + SlotOffset(index);
        Written(SlotOffset(index), TreeNodeLayout.SlotSizeBytes);
        Unsafe.WriteUnaligned(slot, (Unsafe.ReadUnaligned<uint>(slot) & TreeNodeLayout.OffsetMask) | (head << TreeNodeLayout.OffsetBits));
    }

    /// <summary>Points slot <paramref name="index"/> at <paramref name="offset"/>, keeping its key head; the caller records the write.</summary>
    private void SetOffset(int index, int offset)
    {
        byte* slot = _page + SlotOffset(index);
        Unsafe.WriteUnaligned(slot, (Unsafe.ReadUnaligned<uint>(slot) & ~TreeNodeLayout.OffsetMask) | (uint)offset);
    }

    /// <summary>Puts <paramref name="offset"/> into the slot array at <paramref name="index"/>, moving the ones after it up by one; the caller writes its key head.</summary>
    private void InsertOffset(int index, int offset)
    {
        byte* slot = _page + SlotOffset(index);
        int tailBytes = (Count - index) * TreeNodeLayout.SlotSizeBytes;
        Buffer.MemoryCopy(slot, slot + TreeNodeLayout.SlotSizeBytes, tailBytes, tailBytes);
        Unsafe.WriteUnaligned(slot, (uint)offset); // the head follows from KeyPlaced
        Written(SlotOffset(index), tailBytes + TreeNodeLayout.SlotSizeBytes);
        HeaderWritten();
        Header->Lower += TreeNodeLayout.SlotSizeBytes;
    }
}
