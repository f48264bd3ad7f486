using System.Text;

namespace Storage.Tests.Support;

/// <summary>Keys, deterministic values and an ordinal comparer for models.</summary>
internal static class TestData
{
    public static byte[] Key(string text) => Encoding.UTF8.GetBytes(text);

    public static string Show(ReadOnlySpan<byte> bytes)
    {
        var printable = true;
        foreach (var b in bytes)
        {
            if (b is < 0x20 or > 0x7E) printable = false;
        }
        if (printable) return bytes.Length <= 40 ? $"\"{Encoding.ASCII.GetString(bytes)}\"" : $"\"{Encoding.ASCII.GetString(bytes[..32])}...\"({bytes.Length} bytes)";
        return bytes.Length <= 24 ? $"0x{Convert.ToHexString(bytes)}" : $"0x{Convert.ToHexString(bytes[..16])}...({bytes.Length} bytes)";
    }

    /// <summary>A value of <paramref name="length"/> bytes that depends only on (seed, length); seeds divisible by 3 give compressible values.</summary>
    public static byte[] Value(int seed, int length)
    {
        var value = new byte[length];
        var state = (ulong)(uint)seed * 0x9E3779B97F4A7C15UL + (ulong)length + 1;
        if (seed % 3 == 0)
        {
            for (var i = 0; i < length; i++) value[i] = (byte)('a' + (i / 64 + seed) % 26);
            return value;
        }
        for (var i = 0; i < length; i++)
        {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            value[i] = (byte)state;
        }
        return value;
    }

    public static byte[] Value(string text) => Encoding.UTF8.GetBytes(text);
}

/// <summary>Ordinal (memcmp) order, the order the engine keeps keys in.</summary>
internal sealed class OrdinalBytes : IComparer<byte[]>, IEqualityComparer<byte[]>
{
    public static readonly OrdinalBytes Instance = new();

    public int Compare(byte[]? x, byte[]? y) => x.AsSpan().SequenceCompareTo(y);

    public bool Equals(byte[]? x, byte[]? y) => x.AsSpan().SequenceEqual(y);

    public int GetHashCode(byte[] obj)
    {
        var hash = new HashCode();
        hash.AddBytes(obj);
        return hash.ToHashCode();
    }

    public static SortedDictionary<byte[], byte[]> NewModel() => new(Instance);

    public static SortedDictionary<byte[], byte[]> Copy(SortedDictionary<byte[], byte[]> model) => new(model, Instance);
}
