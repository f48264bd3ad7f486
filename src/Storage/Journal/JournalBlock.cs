using System.Runtime.CompilerServices;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>The small checksummed structs that fill a 4 KiB block of a journal file (its header, an end marker).</summary>
internal static unsafe class JournalBlock
{
    public const int Bytes = AlignedBuffer.Alignment;

    /// <summary>CRC32C of <paramref name="value"/> with its 4-byte checksum field (at <paramref name="checksumOffset"/>) taken as zero.</summary>
    public static uint Checksum<T>(in T value, int checksumOffset) where T : unmanaged
    {
        var copy = value;
        var bytes = new Span<byte>(&copy, sizeof(T));
        bytes.Slice(checksumOffset, sizeof(uint)).Clear();
        return Crc32C.Compute(bytes);
    }

    /// <summary>Zeroes the block and writes <paramref name="value"/> at its start.</summary>
    public static void Write<T>(in T value, byte* block) where T : unmanaged
    {
        new Span<byte>(block, Bytes).Clear();
        Unsafe.Write(block, value);
    }
}
