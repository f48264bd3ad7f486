using System.Buffers.Binary;
using System.Numerics;

namespace Storage.Paging;

/// <summary>CRC32C (Castagnoli), hardware-accelerated through <see cref="BitOperations.Crc32C(uint, ulong)"/>.</summary>
internal static class Crc32C
{
    public static uint Compute(ReadOnlySpan<byte> data, uint seed = 0) => Finish(Append(~seed, data));

    /// <summary>Seeds with a 64-bit value (a transaction id), so an entry copied to another position does not verify.</summary>
    public static uint Seed(long value) => (uint)value ^ (uint)(value >>> 32) ^ 0x9E3779B9u;

    public static uint Append(uint state, ReadOnlySpan<byte> data)
    {
        var i = 0;
        // Three independent lanes would hide the instruction's latency; one lane is enough for page-sized inputs here.
        for (; i + 8 <= data.Length; i += 8)
        {
            state = BitOperations.Crc32C(state, BinaryPrimitives.ReadUInt64LittleEndian(data[i..]));
        }
        for (; i < data.Length; i++)
        {
            state = BitOperations.Crc32C(state, data[i]);
        }
        return state;
    }

    public static uint Start(uint seed) => ~seed;

    public static uint Finish(uint state) => ~state;

    /// <summary>Checksum of a page or overflow run, leaving out the checksum field itself.</summary>
    public static unsafe uint ComputePage(byte* page, long lengthBytes)
    {
        var state = Start(0);
        state = Append(state, new ReadOnlySpan<byte>(page, PageHeader.ChecksumOffset));
        var rest = PageHeader.ChecksumOffset + PageHeader.ChecksumSizeBytes;
        var remaining = lengthBytes - rest;
        var p = page + rest;
        while (remaining > 0)
        {
            var chunk = (int)Math.Min(remaining, 1 << 30);
            state = Append(state, new ReadOnlySpan<byte>(p, chunk));
            p += chunk;
            remaining -= chunk;
        }
        return Finish(state);
    }
}
