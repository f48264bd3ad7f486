using System.Diagnostics;
using System.Numerics;
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
/// <para>A slot is a little-endian <c>uint</c>: the node's offset in its low 13 bits, the key head in the high 19. Every key
/// of the page (of a branch, every key but node 0's, which is minus infinity) starts with the same
/// <see cref="PageHeader.KeyPrefixBits"/> bits; the key head is the key's next 19 bits (zeros past the key's end). Heads
/// are in key order, so a search compares heads in the slot array, which a few cache lines hold, and reads a node only
/// when heads tie: a lookup of a page not in the processor's caches waits for the slots and one node instead of a node
/// per step of a binary search. The prefix is counted in bits, not bytes, because keys often carry few bits a byte
/// (hex or decimal text: four or so), and a head that started at a byte boundary would tie far more often.</para>
/// </remarks>
internal static unsafe class TreeNodeLayout
{
    /// <summary>A slot: the node's offset and its key head in one <c>uint</c>.</summary>
    public const int SlotSizeBytes = sizeof(uint);

    /// <summary>The low bits of a slot that hold its node's offset (a page is 8 KiB).</summary>
    public const int OffsetBits = 13;

    public const uint OffsetMask = (1u << OffsetBits) - 1;

    /// <summary>The node offset in slot <paramref name="index"/> of the tree page at <paramref name="page"/>, unchecked.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int NodeOffset(byte* page, int index) =>
        (int)(Unsafe.ReadUnaligned<uint>(page + PageLayout.HeaderSizeBytes + index * SlotSizeBytes) & OffsetMask);

    /// <summary>Bits of a key head: the rest of the slot.</summary>
    public const int HeadBits = 32 - OffsetBits;

    /// <summary>The largest shared prefix a page can have, in bits: the longest key.</summary>
    public const int MaxKeyPrefixBits = TreeLimits.MaxKeySizeBytes * 8;

    /// <summary>
    /// The key head of <paramref name="key"/> on a page whose keys share <paramref name="prefixBits"/> bits: the key's next
    /// <see cref="HeadBits"/> bits, zeros past its end.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static uint KeyHead(ReadOnlySpan<byte> key, int prefixBits)
    {
        int start = prefixBits >> 3;
        uint window;
        if ((uint)key.Length >= (uint)start + sizeof(uint))
        {
            window = System.Buffers.Binary.BinaryPrimitives.ReadUInt32BigEndian(key.Slice(start));
        }
        else
        {
            window = 0;
            for (int i = 0; i < sizeof(uint); i++)
            {
                int at = start + i;
                window = (window << 8) | (at < key.Length ? key[at] : 0u);
            }
        }
        // The prefix's bits in the first byte go out at the top; at most 7 + 19 bits of the window are used.
        return (window << (prefixBits & 7)) >> OffsetBits;
    }

    /// <summary>How many leading bits <paramref name="a"/> and <paramref name="b"/> share.</summary>
    public static int CommonPrefixBits(ReadOnlySpan<byte> a, ReadOnlySpan<byte> b)
    {
        int bytes = a.CommonPrefixLength(b);
        if (bytes == a.Length || bytes == b.Length) return bytes * 8;
        return bytes * 8 + BitOperations.LeadingZeroCount((uint)(a[bytes] ^ b[bytes])) - 24;
    }

    /// <summary>
    /// Compares the first <paramref name="prefixBits"/> bits of <paramref name="key"/> with those of <paramref name="prefix"/>
    /// (a key at least that long): below zero when the key sorts before every key starting with them (it differs lower,
    /// or it ends inside them), above zero when after, zero when the key starts with them.
    /// </summary>
    public static int ComparePrefix(ReadOnlySpan<byte> key, ReadOnlySpan<byte> prefix, int prefixBits)
    {
        int whole = prefixBits >> 3;
        int shared = Math.Min(whole, key.Length);
        int comparison = KeyComparer.Compare(key[..shared], prefix[..shared]);
        if (comparison != 0) return comparison;
        if (key.Length < whole) return -1;
        int rest = prefixBits & 7;
        if (rest == 0) return 0;
        if (key.Length == whole) return -1;
        return (key[whole] >> (8 - rest)) - (prefix[whole] >> (8 - rest));
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
