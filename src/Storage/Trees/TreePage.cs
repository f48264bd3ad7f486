using System.Diagnostics;
using System.Runtime.CompilerServices;
using Storage.Paging;

namespace Storage.Trees;

/// <summary>
/// A bounds-checked view of one slotted tree page (leaf or branch); see <see cref="TreeNodeLayout"/> for the format.
/// </summary>
/// <remarks>
/// The page may come from a damaged file, so nothing read from it is trusted: <see cref="Open(byte*, long)"/> checks the header
/// (page number, type, Lower and Upper), and every node access checks that the node lies inside the node area.
/// A failed check throws <see cref="StorageCorruptedException"/>; no read leaves the 8 KiB page.
/// </remarks>
internal readonly unsafe ref partial struct TreePage
{
    private readonly byte* _page;

    /// <summary>Where this page's writes are recorded (<see cref="Storage.Commit.WrittenLines"/>), or null.</summary>
    private readonly ulong* _writtenLines;

    private TreePage(byte* page, long pageNumber, ulong* writtenLines = null)
    {
        _page = page;
        PageNumber = pageNumber;
        _writtenLines = writtenLines;
    }

    public long PageNumber { get; }

    public byte* Pointer => _page;

    private PageHeader* Header => (PageHeader*)_page;

    public PageFlags Type => Header->Flags & PageFlags.TypeMask;

    public bool IsLeaf => Type == PageFlags.Leaf;

    public bool IsBranch => Type == PageFlags.Branch;

    public int Lower => Header->Lower;

    public int Upper => Header->Upper;

    public int Count => (Header->Lower - PageLayout.HeaderSizeBytes) / TreeNodeLayout.SlotSizeBytes;

    /// <summary>The gap between the slot array and node data: room for an insert without compacting.</summary>
    public int ContiguousFreeBytes => Header->Upper - Header->Lower;

    /// <summary>Checks the header of a leaf or branch page that should be page <paramref name="pageNumber"/>.</summary>
    /// <summary>
    /// A page <see cref="Open(byte*, long)"/> accepted before and that cannot have changed since (a cursor's leaf, whose
    /// tree version it checks): skips the header checks.
    /// </summary>
    public static TreePage Reopen(byte* page, long pageNumber) => new(page, pageNumber);

    /// <summary>As <see cref="Open(byte*, long)"/>, for a page whose writes are recorded into <paramref name="writtenLines"/> (may be null).</summary>
    public static TreePage Open(byte* page, long pageNumber, ulong* writtenLines)
    {
        CheckHeader(page, pageNumber);
        return new TreePage(page, pageNumber, writtenLines);
    }

    public static TreePage Open(byte* page, long pageNumber) => Open(page, pageNumber, writtenLines: null);

    private static void CheckHeader(byte* page, long pageNumber)
    {
        var header = (PageHeader*)page;
        if (header->PageNumber != pageNumber)
        {
            TreeThrowHelper.ThrowPageNumberMismatch(pageNumber, header->PageNumber);
        }
        var type = header->Flags & PageFlags.TypeMask;
        if (type != PageFlags.Leaf && type != PageFlags.Branch)
        {
            TreeThrowHelper.ThrowUnexpectedPageType(pageNumber, header->Flags, "leaf or branch");
        }
        int lower = header->Lower;
        int upper = header->Upper;
        if (lower < PageLayout.HeaderSizeBytes || lower > upper || upper > PageLayout.PageSizeBytes ||
            (lower - PageLayout.HeaderSizeBytes) % TreeNodeLayout.SlotSizeBytes != 0)
        {
            TreeThrowHelper.ThrowBadPageBounds(pageNumber, lower, upper);
        }
        if (header->KeyPrefixBits > TreeNodeLayout.MaxKeyPrefixBits)
        {
            TreeThrowHelper.ThrowBadKeyPrefix(pageNumber, header->KeyPrefixBits);
        }
    }

    /// <summary>How many leading bits every key of the page shares (node 0 of a branch aside).</summary>
    public int KeyPrefixBits => Header->KeyPrefixBits;

    /// <summary>The first node with a key: 0 on a leaf, 1 on a branch (whose node 0 is minus infinity).</summary>
    public int FirstKeyedIndex => IsLeaf ? 0 : 1;

    /// <summary>Slot <paramref name="index"/>'s key head; the caller keeps the index below <see cref="Count"/>.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private uint HeadAt(int index) =>
        Unsafe.ReadUnaligned<uint>(_page + PageLayout.HeaderSizeBytes + index * TreeNodeLayout.SlotSizeBytes) >> TreeNodeLayout.OffsetBits;

    /// <summary>Slot <paramref name="index"/>'s node offset, unchecked; the caller keeps the index inside the slot array.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private int OffsetAt(int index) => TreeNodeLayout.NodeOffset(_page, index);

    /// <summary>Starts loading the slot array (up to 1 KiB of it); the header's line is already in.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void PrefetchSlots()
    {
        if (!System.Runtime.Intrinsics.X86.Sse.IsSupported) return;
        byte* end = _page + Math.Min(Lower, 1024);
        for (byte* line = _page + 64; line < end; line += 64)
        {
            System.Runtime.Intrinsics.X86.Sse.Prefetch0(line);
        }
    }

    public ReadOnlySpan<byte> GetKey(int index)
    {
        int offset = ReadNode(index, out int keySizeBytes, out _);
        int headerSize = IsLeaf ? LeafNodeHeader.SizeBytes : BranchNodeHeader.SizeBytes;
        return new ReadOnlySpan<byte>(_page + offset + headerSize, keySizeBytes);
    }

    public int GetNodeSize(int index)
    {
        ReadNode(index, out _, out int nodeSizeBytes);
        return nodeSizeBytes;
    }

    /// <summary>The node's raw bytes, for copying it whole to another page.</summary>
    public byte* GetNode(int index, out int nodeSizeBytes)
    {
        int offset = ReadNode(index, out _, out nodeSizeBytes);
        return _page + offset;
    }

    public long GetChild(int index)
    {
        Debug.Assert(IsBranch, "only branch nodes have children");
        int offset = ReadNode(index, out _, out _);
        long child = Unsafe.ReadUnaligned<BranchNodeHeader>(_page + offset).ChildPageNumber;
        // The store rejects pages past the end of the file; the file headers and our own page are rejected here.
        if (child < TreeNodeLayout.FirstTreePageNumber || child == PageNumber)
        {
            TreeThrowHelper.ThrowBadChildPageNumber(PageNumber, index, child);
        }
        return child;
    }

    public LeafValue GetValue(int index)
    {
        Debug.Assert(IsLeaf, "only leaf nodes have values");
        int offset = ReadNode(index, out int keySizeBytes, out _);
        var header = Unsafe.ReadUnaligned<LeafNodeHeader>(_page + offset);
        byte* value = _page + offset + LeafNodeHeader.SizeBytes + keySizeBytes;
        if (!header.IsOverflow)
        {
            return new LeafValue(new ReadOnlySpan<byte>(value, header.ValueSizeOrFlags));
        }
        long overflowPage = Unsafe.ReadUnaligned<long>(value);
        if (overflowPage < TreeNodeLayout.FirstTreePageNumber)
        {
            TreeThrowHelper.ThrowBadOverflowReference(PageNumber, index, offset, overflowPage);
        }
        return new LeafValue(overflowPage);
    }

    /// <summary>Search of a leaf: the key's index, or where it would be inserted.</summary>
    public int SearchLeaf(ReadOnlySpan<byte> key, out bool found) => LowerBound(key, 0, out found);

    /// <summary>
    /// The index of <paramref name="key"/> in a leaf, or -1: a lookup, which needs no insert position and so skips the
    /// check of the page's shared prefix (a key without it matches no key of the page in the full comparison).
    /// </summary>
    public int FindInLeaf(ReadOnlySpan<byte> key)
    {
        PrefetchSlots();
        int index = SearchHeads(key, KeyPrefixBits, 0, Count, out bool found);
        return found ? index : -1;
    }

    /// <summary>Search of a branch: the index of the child whose range holds the key.</summary>
    public int SearchBranch(ReadOnlySpan<byte> key)
    {
        if (Count == 0)
        {
            TreeThrowHelper.ThrowEmptyBranch(PageNumber);
        }
        // Node 0's key is minus infinity, so the search is over nodes 1..count-1 for the last key <= key.
        int index = LowerBound(key, 1, out bool found);
        return found ? index : index - 1;
    }

    /// <summary>
    /// The first index at or after <paramref name="first"/> whose key is not below <paramref name="key"/> (Count when
    /// none), and whether that key equals it. The key is compared with the page's shared prefix first (a key outside
    /// it goes before or after every key), then by key heads, then by whole keys among the nodes whose heads tie.
    /// </summary>
    private int LowerBound(ReadOnlySpan<byte> key, int first, out bool found)
    {
        int count = Count;
        found = false;
        if (count <= first) return first;
        PrefetchSlots();
        int prefixBits = KeyPrefixBits;
        if (prefixBits > 0)
        {
            // A key outside the shared prefix goes before or after every key of the page.
            int comparison = TreeNodeLayout.ComparePrefix(key, PrefixKey(first, prefixBits), prefixBits);
            if (comparison < 0) return first;
            if (comparison > 0) return count;
        }
        return SearchHeads(key, prefixBits, first, count, out found);
    }

    /// <summary>
    /// The first index in [<paramref name="first"/>, <paramref name="count"/>) whose key is not below <paramref name="key"/>,
    /// for a key that starts with the page's shared prefix (any other key is found nowhere): by key heads, then by whole
    /// keys among the nodes whose heads tie.
    /// </summary>
    private int SearchHeads(ReadOnlySpan<byte> key, int prefixBits, int first, int count, out bool found)
    {
        uint head = TreeNodeLayout.KeyHead(key, prefixBits);
        int low = HeadLowerBound(head, first, count);
        int high = HeadUpperBound(head, low, count);
        while (low < high)
        {
            int middle = (int)((uint)(low + high) >> 1);
            // A leaf's value follows the key: its next lines are wanted as soon as the key matches.
            PrefetchValueLines(middle);
            int comparison = KeyComparer.Compare(key, GetKey(middle));
            if (comparison == 0)
            {
                found = true;
                return middle;
            }
            if (comparison < 0) high = middle;
            else low = middle + 1;
        }
        found = false;
        return low;
    }

    /// <summary>The first index in [<paramref name="low"/>, <paramref name="high"/>) whose head is not below <paramref name="head"/>.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private int HeadLowerBound(uint head, int low, int high)
    {
        while (low < high)
        {
            int middle = (int)((uint)(low + high) >> 1);
            if (HeadAt(middle) < head) low = middle + 1;
            else high = middle;
        }
        return low;
    }

    /// <summary>The first index in [<paramref name="low"/>, <paramref name="high"/>) whose head is above <paramref name="head"/>.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private int HeadUpperBound(uint head, int low, int high)
    {
        // Ties are rare (19 bits past the shared prefix): look at the next slot before searching.
        if (low >= high || HeadAt(low) != head) return low;
        if (low + 1 >= high || HeadAt(low + 1) != head) return low + 1;
        while (low < high)
        {
            int middle = (int)((uint)(low + high) >> 1);
            if (HeadAt(middle) <= head) low = middle + 1;
            else high = middle;
        }
        return low;
    }

    /// <summary>The key of node <paramref name="first"/>, which holds the page's shared prefix; corruption when it is too short to.</summary>
    private ReadOnlySpan<byte> PrefixKey(int first, int prefixBits)
    {
        var key = GetKey(first);
        if (key.Length * 8 < prefixBits)
        {
            TreeThrowHelper.ThrowKeyShorterThanPrefix(PageNumber, first, key.Length, prefixBits);
        }
        return key;
    }

    /// <summary>
    /// Checks the page's shared prefix and key heads against its keys (validation walks; searches trust them, as
    /// the page's checksum was checked when it was read).
    /// </summary>
    public void CheckKeyHeads()
    {
        int count = Count;
        int first = FirstKeyedIndex;
        if (count <= first) return;
        int prefixBits = KeyPrefixBits;
        var prefix = PrefixKey(first, prefixBits);
        for (int i = first; i < count; i++)
        {
            var key = GetKey(i);
            if (key.Length * 8 < prefixBits || TreeNodeLayout.ComparePrefix(key, prefix, prefixBits) != 0)
            {
                TreeThrowHelper.ThrowBadKeyHead(PageNumber, i, $"the key does not start with the page's shared prefix of {prefixBits} bits");
            }
            uint expected = TreeNodeLayout.KeyHead(key, prefixBits);
            if (HeadAt(i) != expected)
            {
                TreeThrowHelper.ThrowBadKeyHead(PageNumber, i, $"the slot's key head is {HeadAt(i):x8}, the key's is {expected:x8}");
            }
        }
    }

    /// <summary>
    /// Starts loading node <paramref name="index"/> (its first two cache lines) if the page has it; advisory, so an
    /// index outside the page or a bad offset does nothing harmful (a prefetch never faults).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void PrefetchNode(int index)
    {
        if (!System.Runtime.Intrinsics.X86.Sse.IsSupported || (uint)index >= (uint)Count) return;
        byte* node = UncheckedNode(index);
        System.Runtime.Intrinsics.X86.Sse.Prefetch0(node);
        System.Runtime.Intrinsics.X86.Sse.Prefetch0(node + 64);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void PrefetchValueLines(int index)
    {
        if (!System.Runtime.Intrinsics.X86.Sse.IsSupported) return;
        byte* node = UncheckedNode(index);
        System.Runtime.Intrinsics.X86.Sse.Prefetch0(node + 64);
        System.Runtime.Intrinsics.X86.Sse.Prefetch0(node + 127);
    }

    /// <summary>
    /// Where slot <paramref name="index"/> (inside the page's slot array) says its node is, unchecked: only for
    /// prefetching, which never faults; reads go through <see cref="ReadNode"/>.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private byte* UncheckedNode(int index) => _page + OffsetAt(index);

    /// <summary>Bytes taken by offsets and nodes, not counting holes: what the page would use once compacted.</summary>
    public int ComputeUsedBytes()
    {
        int count = Count;
        int nodeBytes = 0;
        for (int i = 0; i < count; i++)
        {
            ReadNode(i, out _, out int nodeSizeBytes);
            nodeBytes += nodeSizeBytes;
        }
        // Separate nodes all fit between Upper and the end of the page; more bytes than that means offsets share
        // or overlap nodes, and a split or merge sized from these numbers could not place them.
        if (nodeBytes > PageLayout.PageSizeBytes - Upper)
        {
            TreeThrowHelper.ThrowOverlappingNodes(PageNumber, nodeBytes, PageLayout.PageSizeBytes - Upper);
        }
        return count * TreeNodeLayout.SlotSizeBytes + nodeBytes;
    }

    /// <summary>Bounds-checks node <paramref name="index"/> and returns its offset in the page.</summary>
    private int ReadNode(int index, out int keySizeBytes, out int nodeSizeBytes)
    {
        if ((uint)index >= (uint)Count)
        {
            TreeThrowHelper.ThrowNodeIndexOutOfRange(PageNumber, index, Count);
        }
        int offset = OffsetAt(index);
        int upper = Upper;
        if (IsLeaf)
        {
            if (offset < upper || offset > PageLayout.PageSizeBytes - LeafNodeHeader.SizeBytes)
            {
                TreeThrowHelper.ThrowBadNodeOffset(PageNumber, index, offset, upper);
            }
            var header = Unsafe.ReadUnaligned<LeafNodeHeader>(_page + offset);
            keySizeBytes = header.KeySizeBytes;
            int valueBytes = header.IsOverflow ? TreeNodeLayout.OverflowReferenceSizeBytes : header.ValueSizeOrFlags;
            if (keySizeBytes < TreeLimits.MinKeySizeBytes || keySizeBytes > TreeLimits.MaxKeySizeBytes ||
                (header.IsOverflow && header.ValueSizeOrFlags != LeafNodeHeader.OverflowFlag) ||
                (!header.IsOverflow && valueBytes > TreeLimits.MaxInlineValueSizeBytes))
            {
                TreeThrowHelper.ThrowBadLeafNode(PageNumber, index, offset, keySizeBytes, header.ValueSizeOrFlags);
            }
            nodeSizeBytes = LeafNodeHeader.SizeBytes + keySizeBytes + valueBytes;
        }
        else
        {
            if (offset < upper || offset > PageLayout.PageSizeBytes - BranchNodeHeader.SizeBytes)
            {
                TreeThrowHelper.ThrowBadNodeOffset(PageNumber, index, offset, upper);
            }
            keySizeBytes = Unsafe.ReadUnaligned<BranchNodeHeader>(_page + offset).KeySizeBytes;
            if (keySizeBytes > TreeLimits.MaxKeySizeBytes)
            {
                TreeThrowHelper.ThrowBadBranchNode(PageNumber, index, offset, keySizeBytes);
            }
            nodeSizeBytes = BranchNodeHeader.SizeBytes + keySizeBytes;
        }
        if (offset + nodeSizeBytes > PageLayout.PageSizeBytes)
        {
            TreeThrowHelper.ThrowNodePastEndOfPage(PageNumber, index, offset, nodeSizeBytes);
        }
        return offset;
    }
}
