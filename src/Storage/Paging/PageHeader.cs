using System.Runtime.InteropServices;

namespace Storage.Paging;

/// <summary>
/// The 32-byte header at the start of every page, and of the first page of an overflow run
/// (the following pages of a run are raw value bytes).
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = PageLayout.HeaderSizeBytes)]
internal struct PageHeader
{
    /// <summary>The page's own number; a page that says it is another page is corruption.</summary>
    [FieldOffset(0)] public long PageNumber;

    [FieldOffset(8)] public PageFlags Flags;

    /// <summary>Slotted pages: end of the slot array (grows up from the header).</summary>
    [FieldOffset(10)] public ushort Lower;

    /// <summary>Slotted pages: start of node data (grows down from the end of the page).</summary>
    [FieldOffset(12)] public ushort Upper;

    /// <summary>Bits 32..47 of <see cref="TransactionId"/>.</summary>
    [FieldOffset(14)] public ushort TransactionIdHigh;

    /// <summary>Overflow runs: the value's size in bytes (the run holds header + value).</summary>
    [FieldOffset(16)] public int OverflowSizeBytes;

    /// <summary>
    /// Leaf and branch pages (in place of <see cref="OverflowSizeBytes"/>): how many leading bits every key of the page
    /// shares; each slot's key head holds the key's next bits (see <see cref="Trees.TreeNodeLayout"/>).
    /// </summary>
    [FieldOffset(16)] public ushort KeyPrefixBits;

    /// <summary>CRC32C of the page (or whole overflow run) with this field zeroed; written when the page goes to the data file.</summary>
    [FieldOffset(20)] public uint Checksum;

    /// <summary>The tree that owns the page (0 = the root tree of tree names).</summary>
    [FieldOffset(24)] public int TreeId;

    /// <summary>Bits 0..31 of <see cref="TransactionId"/>.</summary>
    [FieldOffset(28)] public uint TransactionIdLow;

    /// <summary>
    /// The transaction that last changed the page (48 bits, stamped at commit with the checksum). A page in the
    /// data file newer than the state that reads it is damage: the data file holds a future the journal lost.
    /// </summary>
    public long TransactionId
    {
        readonly get => ((long)TransactionIdHigh << 32) | TransactionIdLow;
        set
        {
            TransactionIdLow = (uint)value;
            TransactionIdHigh = (ushort)(value >> 32);
        }
    }

    /// <summary>Transaction ids must fit the 48 bits a page header keeps.</summary>
    public const long MaxTransactionId = (1L << 48) - 1;

    public const int ChecksumOffset = 20;
    public const int ChecksumSizeBytes = 4;
}
