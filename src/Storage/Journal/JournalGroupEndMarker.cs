using System.Buffers.Binary;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>Where one member's journal continues after a shared file: the member's own number for the file, and its next file and transaction.</summary>
internal readonly record struct GroupEndRecord(ulong EnvironmentId, long FileNumber, long NextFileNumber, long NextTransactionId);

/// <summary>
/// The 4 KiB block after the last entry of a shared journal file (<see cref="JournalFileHeader.SharedFlag"/>): for each
/// environment with entries in the file, the number the file has in that environment's journal folder and where its journal
/// continues. It is the shared counterpart of <see cref="JournalEndMarker"/>: a member's newest link that went missing is
/// damage, not the end of its journal.
/// </summary>
/// <remarks>
/// Layout (little-endian): magic (8 bytes), the writing environment's id (8), the writer's number for the file (8), the
/// record count (4), CRC32C of the header and records with this field zero (4); then per record the environment id,
/// its number for the file, its next file's number and its next transaction id (8 bytes each).
/// </remarks>
internal static class JournalGroupEndMarker
{
    public const ulong ExpectedMagic = 0x5052474A_47524F54; // "TORGJGRP"
    public const int BlockBytes = JournalBlock.Bytes;
    public const int HeaderBytes = 32;
    public const int RecordBytes = 32;
    public const int MaxRecords = (BlockBytes - HeaderBytes) / RecordBytes;
    private const int ChecksumOffset = 28;

    /// <summary>Writes the marker over the whole of <paramref name="block"/> (zeroed after the records).</summary>
    public static void Write(Span<byte> block, ulong writerEnvironmentId, long fileNumber, ReadOnlySpan<GroupEndRecord> records)
    {
        if (block.Length < BlockBytes) throw new ArgumentException("A group end marker takes a whole block.", nameof(block));
        if (records.Length > MaxRecords) throw new ArgumentException($"A group end marker holds at most {MaxRecords} environments.", nameof(records));
        block[..BlockBytes].Clear();
        BinaryPrimitives.WriteUInt64LittleEndian(block, ExpectedMagic);
        BinaryPrimitives.WriteUInt64LittleEndian(block[8..], writerEnvironmentId);
        BinaryPrimitives.WriteInt64LittleEndian(block[16..], fileNumber);
        BinaryPrimitives.WriteInt32LittleEndian(block[24..], records.Length);
        for (var i = 0; i < records.Length; i++)
        {
            var at = block[(HeaderBytes + i * RecordBytes)..];
            BinaryPrimitives.WriteUInt64LittleEndian(at, records[i].EnvironmentId);
            BinaryPrimitives.WriteInt64LittleEndian(at[8..], records[i].FileNumber);
            BinaryPrimitives.WriteInt64LittleEndian(at[16..], records[i].NextFileNumber);
            BinaryPrimitives.WriteInt64LittleEndian(at[24..], records[i].NextTransactionId);
        }
        BinaryPrimitives.WriteUInt32LittleEndian(block[ChecksumOffset..], Checksum(block, records.Length));
    }

    /// <summary>The marker in a block of its own, ready for a durable write.</summary>
    public static unsafe AlignedBuffer ToBlock(ulong writerEnvironmentId, long fileNumber, ReadOnlySpan<GroupEndRecord> records)
    {
        var block = new AlignedBuffer(BlockBytes);
        try
        {
            Write(new Span<byte>(block.Pointer, BlockBytes), writerEnvironmentId, fileNumber, records);
        }
        catch
        {
            block.Dispose();
            throw;
        }
        return block;
    }

    /// <summary>Whether <paramref name="block"/> starts with the marker's magic (valid or not).</summary>
    public static bool HasMagic(ReadOnlySpan<byte> block) => block.Length >= 8 && BinaryPrimitives.ReadUInt64LittleEndian(block) == ExpectedMagic;

    /// <summary>The writer's number for the file, read from a block that starts with the marker's magic (valid or not), or null.</summary>
    public static long? WriterFileNumber(ReadOnlySpan<byte> block) =>
        block.Length >= HeaderBytes && HasMagic(block) ? BinaryPrimitives.ReadInt64LittleEndian(block[16..]) : null;

    /// <summary>
    /// The record of <paramref name="environmentId"/> for its file <paramref name="fileNumber"/> in a valid marker at the start
    /// of <paramref name="block"/>, or null (no valid marker, or no such record).
    /// </summary>
    public static GroupEndRecord? TryFind(ReadOnlySpan<byte> block, ulong environmentId, long fileNumber)
    {
        if (block.Length < HeaderBytes || !HasMagic(block)) return null;
        var count = BinaryPrimitives.ReadInt32LittleEndian(block[24..]);
        if (count < 0 || count > MaxRecords || block.Length < HeaderBytes + count * RecordBytes) return null;
        if (BinaryPrimitives.ReadUInt32LittleEndian(block[ChecksumOffset..]) != Checksum(block, count)) return null;
        for (var i = 0; i < count; i++)
        {
            var at = block[(HeaderBytes + i * RecordBytes)..];
            var record = new GroupEndRecord(
                BinaryPrimitives.ReadUInt64LittleEndian(at),
                BinaryPrimitives.ReadInt64LittleEndian(at[8..]),
                BinaryPrimitives.ReadInt64LittleEndian(at[16..]),
                BinaryPrimitives.ReadInt64LittleEndian(at[24..]));
            if (record.EnvironmentId == environmentId && record.FileNumber == fileNumber)
            {
                return record.NextFileNumber > fileNumber && record.NextTransactionId >= 1 ? record : null;
            }
        }
        return null;
    }

    private static uint Checksum(ReadOnlySpan<byte> block, int count)
    {
        Span<byte> header = stackalloc byte[HeaderBytes];
        block[..HeaderBytes].CopyTo(header);
        header.Slice(ChecksumOffset, sizeof(uint)).Clear();
        var state = Crc32C.Append(Crc32C.Start(0), header);
        return Crc32C.Finish(Crc32C.Append(state, block.Slice(HeaderBytes, count * RecordBytes)));
    }
}
