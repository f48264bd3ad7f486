using System.Buffers.Binary;
using System.Text;

namespace Storage;

/// <summary>
/// Keys whose byte order is the order of the values they encode, since trees keep keys in byte order: integers
/// big-endian (signed ones with the sign bit flipped, so that -1 sorts before 0), text as UTF-8. For keys of several
/// parts (an index's value and then the record's key), see <see cref="KeyBuilder"/> and <see cref="KeyReader"/>.
/// </summary>
public static class Keys
{
    /// <summary>8 bytes that sort as <paramref name="value"/> does.</summary>
    public static byte[] Int64(long value)
    {
        var key = new byte[sizeof(long)];
        BinaryPrimitives.WriteUInt64BigEndian(key, (ulong)value ^ SignBit64);
        return key;
    }

    /// <summary>4 bytes that sort as <paramref name="value"/> does.</summary>
    public static byte[] Int32(int value)
    {
        var key = new byte[sizeof(int)];
        BinaryPrimitives.WriteUInt32BigEndian(key, (uint)value ^ SignBit32);
        return key;
    }

    /// <summary>8 bytes that sort as <paramref name="value"/> does.</summary>
    public static byte[] UInt64(ulong value)
    {
        var key = new byte[sizeof(ulong)];
        BinaryPrimitives.WriteUInt64BigEndian(key, value);
        return key;
    }

    /// <summary>The UTF-8 bytes of <paramref name="value"/> (which sort as the text's code points do).</summary>
    public static byte[] Utf8(string value)
    {
        ArgumentNullException.ThrowIfNull(value);
        return Encoding.UTF8.GetBytes(value);
    }

    /// <summary>Reads a key made by <see cref="Int64"/>.</summary>
    /// <exception cref="ArgumentException">The key is not 8 bytes long.</exception>
    public static long ReadInt64(ReadOnlySpan<byte> key) => (long)(BinaryPrimitives.ReadUInt64BigEndian(Exactly(key, sizeof(long))) ^ SignBit64);

    /// <summary>Reads a key made by <see cref="Int32"/>.</summary>
    /// <exception cref="ArgumentException">The key is not 4 bytes long.</exception>
    public static int ReadInt32(ReadOnlySpan<byte> key) => (int)(BinaryPrimitives.ReadUInt32BigEndian(Exactly(key, sizeof(int))) ^ SignBit32);

    /// <summary>Reads a key made by <see cref="UInt64"/>.</summary>
    /// <exception cref="ArgumentException">The key is not 8 bytes long.</exception>
    public static ulong ReadUInt64(ReadOnlySpan<byte> key) => BinaryPrimitives.ReadUInt64BigEndian(Exactly(key, sizeof(ulong)));

    /// <summary>Reads a key made by <see cref="Utf8"/>.</summary>
    /// <exception cref="ArgumentException">The key is not valid UTF-8.</exception>
    public static string ReadUtf8(ReadOnlySpan<byte> key)
    {
        try
        {
            return StrictUtf8.GetString(key);
        }
        catch (DecoderFallbackException e)
        {
            throw new ArgumentException("The key is not valid UTF-8.", nameof(key), e);
        }
    }

    internal const ulong SignBit64 = 1UL << 63;
    internal const uint SignBit32 = 1U << 31;

    /// <summary>UTF-8 that throws on invalid bytes instead of replacing them.</summary>
    internal static readonly UTF8Encoding StrictUtf8 = new(encoderShouldEmitUTF8Identifier: false, throwOnInvalidBytes: true);

    private static ReadOnlySpan<byte> Exactly(ReadOnlySpan<byte> key, int length) =>
        key.Length == length ? key : throw new ArgumentException($"The key is {key.Length} bytes long, not {length}.", nameof(key));
}
