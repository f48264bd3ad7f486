using System.Diagnostics;
using System.Runtime.CompilerServices;
using Storage.Paging;

namespace Storage.Trees;

/// <summary>
/// Sizes and encoders of the nodes of slotted tree pages.
/// </summary>
/// <remarks>
/// <para>A tree page is <c>[PageHeader 32 B][slots, growing up][free gap][node data, growing down]</c>: the slot array grows up
/// from the header (<see cref="PageHeader.Lower"/> is its end) and node data grows down from the end of the page
/// (<see cref="PageHeader.Upper"/> is its start). Slots are kept in key order; node data is in any order and
/// may have holes left by deletes, which a compaction removes when an insert needs the room.</para>
/// <para>A slot is <c>[ushort node offset][uint key head]</c>. Every key of the page (of a branch, every key but node 0's,
/// which is minus infinity) starts with the same <see cref="PageHeader.KeyPrefixBytes"/> bytes; the key head is the
/// key's next four bytes read as a big-endian number (zeros past the key's end), stored little-endian. Heads are in
/// key order, so a search compares heads in the slot array, which a few cache lines hold, and reads a node only when
/// heads tie: a lookup of a page not in the processor's caches waits for the slots and one node instead of a node
/// per step of a binary search.</para>
/// </remarks>
internal static unsafe class TreeNodeLayout
{
    /// <summary>A slot: the node's offset, then its key head.</summary>
    public const int SlotSizeBytes = sizeof(ushort) + sizeof(uint);

    /// <summary>Where a slot's key head starts.</summary>
    public const int HeadOffsetInSlot = sizeof(ushort);

    /// <summary>The key head of <paramref name="key"/> on a page whose keys share <paramref name="prefixBytes"/> bytes.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static uint KeyHead(ReadOnlySpan<byte> key, int prefixBytes)
    {
        if ((uint)key.Length >= (uint)prefixBytes + sizeof(uint))
        {
            return System.Buffers.Binary.BinaryPrimitives.ReadUInt32BigEndian(key.Slice(prefixBytes));
        }
        uint head = 0;
        for (int i = 0; i < sizeof(uint); i++)
        {
            int at = prefixBytes + i;
            head = (head << 8) | (at < key.Length ? key[at] : 0u);
        }
        return head;
    }

    /// <summary>Bytes for offsets and nodes on one page.</summary>
    public const int UsableBytes = PageLayout.PageSizeBytes - PageLayout.HeaderSizeBytes;

    /// <summary>A page holding less than this (offsets + nodes) is merged with a sibling when the two fit in one page.</summary>
    public const int UnderfullThresholdBytes = UsableBytes / 4;

    public const int OverflowReferenceSizeBytes = sizeof(long);

    public const int MaxLeafNodeSizeBytes = LeafNodeHeader.SizeBytes + TreeLimits.MaxKeySizeBytes + TreeLimits.MaxInlineValueSizeBytes;
    public const int MaxBranchNodeSizeBytes = BranchNodeHeader.SizeBytes + TreeLimits.MaxKeySizeBytes;
    public const int MaxNodeSizeBytes = MaxLeafNodeSizeBytes > MaxBranchNodeSizeBytes ? MaxLeafNodeSizeBytes : MaxBranchNodeSizeBytes;

    /// <summary>Most nodes a page can hold (smallest leaf node: one key byte, empty value), plus one being inserted.</summary>
    public const int MaxNodesPerSplit = UsableBytes / (SlotSizeBytes + LeafNodeHeader.SizeBytes + TreeLimits.MinKeySizeBytes) + 1;

    /// <summary>
    /// Deeper than any real tree can grow (fan-out is at least 7, so 64 levels would be more pages than a file can
    /// hold); a descent that goes further is walking a cycle in a damaged file.
    /// </summary>
    public const int MaxTreeDepth = 64;

    /// <summary>"No overflow run": page 0 is a file header, never part of a tree.</summary>
    public const long NoOverflowPage = 0;

    /// <summary>The first page number a tree page can have (0 and 1 are the file headers).</summary>
    public const long FirstTreePageNumber = PageLayout.SecondHeaderPage + 1;

    public static int LeafNodeSize(int keySizeBytes, int inlineValueSizeBytes, bool isOverflow) =>
        LeafNodeHeader.SizeBytes + keySizeBytes + (isOverflow ? OverflowReferenceSizeBytes : inlineValueSizeBytes);

    public static int BranchNodeSize(int keySizeBytes) => BranchNodeHeader.SizeBytes + keySizeBytes;

    /// <summary>Encodes a leaf node at <paramref name="destination"/>; returns its size.</summary>
    public static int WriteLeafNode(byte* destination, ReadOnlySpan<byte> key, ReadOnlySpan<byte> inlineValue, long overflowPage)
    {
        bool isOverflow = overflowPage != NoOverflowPage;
        Debug.Assert(key.Length is >= TreeLimits.MinKeySizeBytes and <= TreeLimits.MaxKeySizeBytes, "keys are checked at the API");
        Debug.Assert(inlineValue.Length <= TreeLimits.MaxInlineValueSizeBytes, "larger values go to overflow runs");
        Debug.Assert(!isOverflow || inlineValue.IsEmpty, "a node holds either the value or a reference to it");

        Unsafe.WriteUnaligned(destination, new LeafNodeHeader
        {
            KeySizeBytes = (ushort)key.Length,
            ValueSizeOrFlags = isOverflow ? LeafNodeHeader.OverflowFlag : (ushort)inlineValue.Length,
        });
        byte* keyStart = destination + LeafNodeHeader.SizeBytes;
        key.CopyTo(new Span<byte>(keyStart, key.Length));
        byte* valueStart = keyStart + key.Length;
        if (isOverflow)
        {
            Unsafe.WriteUnaligned(valueStart, overflowPage);
        }
        else
        {
            inlineValue.CopyTo(new Span<byte>(valueStart, inlineValue.Length));
        }
        return LeafNodeSize(key.Length, inlineValue.Length, isOverflow);
    }

    /// <summary>Encodes a branch node at <paramref name="destination"/>; returns its size.</summary>
    public static int WriteBranchNode(byte* destination, ReadOnlySpan<byte> key, long childPageNumber)
    {
        Debug.Assert(key.Length <= TreeLimits.MaxKeySizeBytes, "separators are prefixes of keys");
        Debug.Assert(childPageNumber >= FirstTreePageNumber, "children are tree pages");

        Unsafe.WriteUnaligned(destination, new BranchNodeHeader { KeySizeBytes = (ushort)key.Length, ChildPageNumber = childPageNumber });
        key.CopyTo(new Span<byte>(destination + BranchNodeHeader.SizeBytes, key.Length));
        return BranchNodeSize(key.Length);
    }

    /// <summary>The key of a node this process encoded itself (not read from a page, so not bounds-checked).</summary>
    public static ReadOnlySpan<byte> KeyOfEncodedNode(byte* node, bool isLeaf)
    {
        if (isLeaf)
        {
            var header = Unsafe.ReadUnaligned<LeafNodeHeader>(node);
            return new ReadOnlySpan<byte>(node + LeafNodeHeader.SizeBytes, header.KeySizeBytes);
        }
        var branch = Unsafe.ReadUnaligned<BranchNodeHeader>(node);
        return new ReadOnlySpan<byte>(node + BranchNodeHeader.SizeBytes, branch.KeySizeBytes);
    }

    /// <summary>The child of a branch node this process encoded itself.</summary>
    public static long ChildOfEncodedNode(byte* node) => Unsafe.ReadUnaligned<BranchNodeHeader>(node).ChildPageNumber;
}
