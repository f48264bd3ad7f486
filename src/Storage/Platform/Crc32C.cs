using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.Intrinsics.X86;
using System.Runtime.Intrinsics;
using Storage.Paging;

namespace Storage.Platform;

/// <summary>CRC32C (Castagnoli), hardware-accelerated through <see cref="BitOperations.Crc32C(uint, ulong)"/>.</summary>
/// <remarks>
/// The instruction has a latency of three cycles and a throughput of one, so one dependency chain runs at a
/// third of its speed. Inputs of a few KiB and more are cut into chunks of three lanes computed side by side;
/// the lanes are joined by multiplying a lane's CRC by x^(8 × lane length) modulo the polynomial (a CRC
/// is linear: CRC(A‖B) = CRC(A) · x^(8|B|) ⊕ CRC₀(B)).
/// </remarks>
internal static unsafe class Crc32C
{
    private const uint ReflectedPolynomial = 0x82F63B78;
    private const int LaneBytes = 2720;
    private const int ChunkBytes = 3 * LaneBytes;

    /// <summary>x^(8 × <see cref="LaneBytes"/>) mod P, in the reflected bit order the instruction uses.</summary>
    private static readonly uint s_laneShift = PowerOfX(8L * LaneBytes);

    /// <summary>x^(8 × <see cref="LaneBytes"/> − 33) mod P, for <see cref="MultiplyReduced"/>.</summary>
    private static readonly uint s_laneShiftReduced = PowerOfX(8L * LaneBytes - 33);

    public static uint Compute(ReadOnlySpan<byte> data, uint seed = 0) => Finish(Append(Start(seed), data));

    /// <summary>Seeds with a 64-bit value (a transaction id), so an entry copied to another position does not verify.</summary>
    public static uint Seed(long value) => (uint)value ^ (uint)(value >>> 32) ^ 0x9E3779B9u;

    public static uint Start(uint seed) => ~seed;

    public static uint Finish(uint state) => ~state;

    public static uint Append(uint state, ReadOnlySpan<byte> data)
    {
        fixed (byte* p = data)
        {
            return Append(state, p, data.Length);
        }
    }

    public static uint Append(uint state, byte* p, long length)
    {
        while (length >= ChunkBytes)
        {
            state = ThreeLanes(state, p);
            p += ChunkBytes;
            length -= ChunkBytes;
        }
        for (; length >= 8; p += 8, length -= 8) state = BitOperations.Crc32C(state, Unsafe.ReadUnaligned<ulong>(p));
        for (; length > 0; p++, length--) state = BitOperations.Crc32C(state, *p);
        return state;
    }

    private static uint ThreeLanes(uint state, byte* p)
    {
        uint a = state, b = 0, c = 0;
        var end = p + LaneBytes;
        for (; p < end; p += 8)
        {
            a = BitOperations.Crc32C(a, Unsafe.ReadUnaligned<ulong>(p));
            b = BitOperations.Crc32C(b, Unsafe.ReadUnaligned<ulong>(p + LaneBytes));
            c = BitOperations.Crc32C(c, Unsafe.ReadUnaligned<ulong>(p + 2 * LaneBytes));
        }
        if (Pclmulqdq.IsSupported) return MultiplyReduced(MultiplyReduced(a, s_laneShiftReduced) ^ b, s_laneShiftReduced) ^ c;
        return MultiplyModP(MultiplyModP(a, s_laneShift) ^ b, s_laneShift) ^ c;
    }

    /// <summary>Checksum of a page or overflow run, leaving out the checksum field itself.</summary>
    public static uint ComputePage(byte* page, long lengthBytes)
    {
        var state = Append(Start(0), page, PageHeader.ChecksumOffset);
        var rest = PageHeader.ChecksumOffset + PageHeader.ChecksumSizeBytes;
        return Finish(Append(state, page + rest, lengthBytes - rest));
    }

    /// <summary>
    /// The raw CRC state (no seed, no final inversion) of the bytes <paramref name="a"/>[i] ⊕ <paramref name="b"/>[i].
    /// CRC32C with its seed and inversion is affine, so for two messages of one length
    /// CRC(A) ⊕ CRC(B) = raw(A ⊕ B): a changed page's checksum follows from the old one and the bytes that changed.
    /// </summary>
    public static uint RawOfXor(byte* a, byte* b, int length)
    {
        uint state = 0;
        var i = 0;
        for (; i + 8 <= length; i += 8) state = BitOperations.Crc32C(state, Unsafe.ReadUnaligned<ulong>(a + i) ^ Unsafe.ReadUnaligned<ulong>(b + i));
        for (; i < length; i++) state = BitOperations.Crc32C(state, (byte)(a[i] ^ b[i]));
        return state;
    }

    /// <summary>The raw CRC state after <paramref name="zeroBytes"/> (at most a page) more zero bytes: state · x^(8 × n) mod P.</summary>
    public static uint AppendZeros(uint state, int zeroBytes) =>
        Pclmulqdq.IsSupported && zeroBytes >= ZeroShifts.FirstReduced
            ? MultiplyReduced(state, ZeroShifts.Reduced[zeroBytes])
            : MultiplyModP(state, ZeroShifts.Table[zeroBytes]);

    /// <summary>
    /// a · x^e mod P from <paramref name="reducedPower"/> = x^(e − 33) mod P, in a carry-less multiply and one CRC
    /// instruction: in reflected order the 64-bit product of two 32-bit values stands for a · x^(e − 33) · x, and the
    /// instruction reduces a 64-bit value v to v · x^32 mod P. (The bit loop of <see cref="MultiplyModP"/> takes a
    /// mispredicted branch on every other bit; this takes a few cycles.)
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static uint MultiplyReduced(uint a, uint reducedPower)
    {
        var product = Pclmulqdq.CarrylessMultiply(Vector128.CreateScalarUnsafe((ulong)a), Vector128.CreateScalarUnsafe((ulong)reducedPower), 0);
        return BitOperations.Crc32C(0u, product.ToScalar());
    }

    /// <summary>x^(8 × n) mod P for n from 0 to a page, and x^(8 × n − 33) mod P for the carry-less multiply, built on first use.</summary>
    private static class ZeroShifts
    {
        /// <summary>The least n for which 8 × n − 33 is not negative.</summary>
        public const int FirstReduced = 5;

        public static readonly uint[] Table = Build(PowerOfX(0));

        public static readonly uint[] Reduced = Build(PowerOfX(8 * FirstReduced - 33), FirstReduced);

        private static uint[] Build(uint first, int firstIndex = 0)
        {
            var table = new uint[PageLayout.PageSizeBytes + 1];
            var byteShift = PowerOfX(8);
            table[firstIndex] = first;
            for (var n = firstIndex + 1; n < table.Length; n++) table[n] = MultiplyModP(table[n - 1], byteShift);
            return table;
        }
    }

    /// <summary>a · b mod P, both in reflected order (bit 31 is x^0).</summary>
    private static uint MultiplyModP(uint a, uint b)
    {
        uint product = 0;
        for (var i = 0; i < 32; i++, a <<= 1)
        {
            if ((a & 0x8000_0000) != 0) product ^= b;
            b = (b & 1) != 0 ? (b >> 1) ^ ReflectedPolynomial : b >> 1;
        }
        return product;
    }

    private static uint PowerOfX(long exponent)
    {
        uint result = 0x8000_0000; // x^0
        uint square = 0x4000_0000; // x^1
        for (; exponent > 0; exponent >>= 1, square = MultiplyModP(square, square))
        {
            if ((exponent & 1) != 0) result = MultiplyModP(result, square);
        }
        return result;
    }
}
