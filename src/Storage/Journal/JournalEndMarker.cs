using System.Runtime.InteropServices;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>
/// A 4 KiB block written durably right after a file's last entry when the writer moves on to the next file: it
/// says the journal continues in <see cref="NextFileNumber"/> with <see cref="NextTransactionId"/>. Without it a
/// deleted newest file would look like the end of the journal; with it, a missing next file is damage.
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = SizeBytes)]
internal struct JournalEndMarker
{
    public const int SizeBytes = 64;

    public const int BlockBytes = JournalBlock.Bytes;

    public const int ChecksumOffset = 40;

    public const ulong ExpectedMagic = 0x444E454A_47524F54; // "TORGJEND"

    [FieldOffset(0)] public ulong Magic;
    [FieldOffset(8)] public ulong EnvironmentId;
    [FieldOffset(16)] public long FileNumber;
    [FieldOffset(24)] public long NextFileNumber;
    [FieldOffset(32)] public long NextTransactionId;

    /// <summary>CRC32C of this struct with the field zeroed.</summary>
    [FieldOffset(40)] public uint Checksum;

    [FieldOffset(44)] public int Reserved;
    [FieldOffset(48)] public long Reserved2;
    [FieldOffset(56)] public long Reserved3;

    public static JournalEndMarker Create(ulong environmentId, long fileNumber, long nextFileNumber, long nextTransactionId)
    {
        var marker = new JournalEndMarker
        {
            Magic = ExpectedMagic,
            EnvironmentId = environmentId,
            FileNumber = fileNumber,
            NextFileNumber = nextFileNumber,
            NextTransactionId = nextTransactionId,
        };
        marker.Checksum = marker.ComputeChecksum();
        return marker;
    }

    private readonly uint ComputeChecksum() => JournalBlock.Checksum(this, ChecksumOffset);

    public readonly unsafe void WriteBlock(byte* block) => JournalBlock.Write(this, block);

    /// <summary>The marker in a block of its own, ready for a durable write.</summary>
    public readonly unsafe AlignedBuffer ToBlock()
    {
        var block = new AlignedBuffer(BlockBytes);
        WriteBlock(block.Pointer);
        return block;
    }

    /// <summary>A valid marker of file <paramref name="fileNumber"/> of this environment at the start of <paramref name="block"/>, or null.</summary>
    public static JournalEndMarker? TryParse(ReadOnlySpan<byte> block, ulong environmentId, long fileNumber)
    {
        if (block.Length < SizeBytes) return null;
        var marker = MemoryMarshal.Read<JournalEndMarker>(block);
        if (marker.Magic != ExpectedMagic || marker.Checksum != marker.ComputeChecksum()) return null;
        if (marker.EnvironmentId != environmentId || marker.FileNumber != fileNumber || marker.NextFileNumber <= fileNumber) return null;
        return marker;
    }
}
