using System.Runtime.InteropServices;
using Storage.Trees;

namespace Storage.Journal;

/// <summary>
/// The header of one journal entry (one committed transaction). The entry is the header, then the
/// payload (page records, compressed when <see cref="Flags"/> says so), padded to 4 KiB.
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = SizeBytes)]
internal struct JournalEntryHeader
{
    public const int SizeBytes = 128;
    public const ulong ExpectedMarker = 0x4C4E524A_47524F54; // "TORGJRNL"
    public const int CompressedFlag = 1;

    [FieldOffset(0)] public ulong Marker;
    [FieldOffset(8)] public ulong EnvironmentId;
    [FieldOffset(16)] public long TransactionId;

    /// <summary>Stored payload size (after compression).</summary>
    [FieldOffset(24)] public long PayloadSizeBytes;

    [FieldOffset(32)] public long UncompressedSizeBytes;

    /// <summary>The first never-allocated page after this transaction.</summary>
    [FieldOffset(40)] public long NextPageNumber;

    [FieldOffset(48)] public int RecordCount;
    [FieldOffset(52)] public int Flags;

    /// <summary>CRC32C of header (this field zeroed) and stored payload, seeded with the transaction id.</summary>
    [FieldOffset(56)] public uint Checksum;

    /// <summary>
    /// In a shared journal file (<see cref="JournalFileHeader.SharedFlag"/>), the low 32 bits of the writer's number for the
    /// file, so that in a recycled shared file the stale entries of its earlier use (other numbers) are not taken for entries
    /// of this one; 0 in an environment's own files.
    /// </summary>
    [FieldOffset(60)] public int SharedFileStamp;

    /// <summary>The root tree (tree names) after this transaction.</summary>
    [FieldOffset(64)] public TreeHeader RootTree;

    public const int ChecksumOffset = 56;

    public readonly bool IsCompressed => (Flags & CompressedFlag) != 0;

    /// <summary>The stamp entries carry in the shared file the writer numbers <paramref name="fileNumber"/>.</summary>
    public static int StampOf(long fileNumber) => unchecked((int)fileNumber);
}
