using System.Runtime.InteropServices;
using Storage.Trees;

namespace Storage.State;

/// <summary>
/// One of the two alternating file headers (pages 0 and 1 of the data file, after the page header).
/// The valid one with the higher <see cref="Sequence"/> says what the data file holds.
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = SizeBytes)]
internal struct FileHeader
{
    public const int SizeBytes = 136;
    public const ulong ExpectedMagic = 0x31454741_524F5453; // "STORAGE1"
    /// <summary>3: a tree page's slots carry key heads beside the offsets, and its header the bits its keys share (2 had bare offsets).</summary>
    public const int CurrentFormatVersion = 3;

    [FieldOffset(0)] public ulong Magic;
    [FieldOffset(8)] public int FormatVersion;
    [FieldOffset(12)] public int PageSizeBytes;
    [FieldOffset(16)] public ulong EnvironmentId;
    [FieldOffset(24)] public long Sequence;

    /// <summary>Every transaction up to this one is in the data file, which was fsynced before this header was written.</summary>
    [FieldOffset(32)] public long LastSyncedTransactionId;

    [FieldOffset(40)] public long NextPageNumber;

    /// <summary>Where the journal entry after <see cref="LastSyncedTransactionId"/> starts.</summary>
    [FieldOffset(48)] public long JournalFileNumber;

    [FieldOffset(56)] public long JournalOffsetBytes;

    [FieldOffset(64)] public TreeHeader RootTree;

    /// <summary>CRC32C of this struct with the field zeroed.</summary>
    [FieldOffset(128)] public uint Checksum;

    [FieldOffset(132)] public int Reserved;

    public const int ChecksumOffset = 128;

    /// <summary>A header of the current format saying the data file holds everything up to <paramref name="record"/>.</summary>
    public static FileHeader Synced(ulong environmentId, long sequence, in CommitRecord record) => new()
    {
        Magic = ExpectedMagic,
        FormatVersion = CurrentFormatVersion,
        PageSizeBytes = Paging.PageLayout.PageSizeBytes,
        EnvironmentId = environmentId,
        Sequence = sequence,
        LastSyncedTransactionId = record.TransactionId,
        NextPageNumber = record.NextPageNumber,
        JournalFileNumber = record.JournalFileNumber,
        JournalOffsetBytes = record.JournalEndOffsetBytes,
        RootTree = record.RootTree,
    };
}
