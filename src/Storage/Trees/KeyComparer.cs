using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace Storage.Trees;

/// <summary>
/// Ordinal (memcmp) comparison of keys, tuned for the short keys a tree mostly holds: eight bytes at a
/// time as big-endian integers, where the general span comparison pays vector set-up per call.
/// </summary>
internal static class KeyComparer
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int Compare(ReadOnlySpan<byte> left, ReadOnlySpan<byte> right)
    {
        var length = Math.Min(left.Length, right.Length);
        // The word trick below reads the first differing byte as the lowest one, which holds on little-endian machines only.
        if (length > 64 || !BitConverter.IsLittleEndian) return left.SequenceCompareTo(right);
        ref var l = ref MemoryMarshal.GetReference(left);
        ref var r = ref MemoryMarshal.GetReference(right);
        var i = 0;
        for (; i + 8 <= length; i += 8)
        {
            var a = Unsafe.ReadUnaligned<ulong>(ref Unsafe.Add(ref l, i));
            var b = Unsafe.ReadUnaligned<ulong>(ref Unsafe.Add(ref r, i));
            if (a != b)
            {
                // The first differing byte decides: in little-endian words that is the lowest differing byte.
                var shift = BitOperations.TrailingZeroCount(a ^ b) & ~7;
                return ((a >> shift) & 0xFF) < ((b >> shift) & 0xFF) ? -1 : 1;
            }
        }
        for (; i < length; i++)
        {
            var a = Unsafe.Add(ref l, i);
            var b = Unsafe.Add(ref r, i);
            if (a != b) return a < b ? -1 : 1;
        }
        return left.Length.CompareTo(right.Length);
    }


}
