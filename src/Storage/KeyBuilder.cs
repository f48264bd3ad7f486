using System.Buffers;
using System.Buffers.Binary;
using System.Text;

namespace Storage;

/// <summary>
/// Builds a key of several parts whose byte order is the order of its parts, part by part: an index key
/// (customer, order number) sorts by customer, then by order number, so all of one customer's entries are one prefix.
/// Read it back with <see cref="KeyReader"/>.
/// </summary>
/// <remarks>
/// <para>Integers take a fixed width, big-endian (signed ones with the sign bit flipped). Text (UTF-8) and bytes are
/// escaped and terminated: each 0x00 byte becomes 0x00 0xFF and the part ends with 0x00 0x00, so a part never runs into
/// the next and a shorter text sorts before a longer one that starts with it ("ab" before "abc", ("a", x) before
/// ("ab", y)). A key built from the first parts only (<c>new KeyBuilder().Add("customer-7")</c>) is therefore a prefix
/// of exactly the keys whose first parts are those: scan it with <see cref="Tree.Prefix"/>.</para>
/// <para>A builder can be reused (<see cref="Clear"/>); <see cref="AsSpan"/> gives the key without a copy.</para>
/// </remarks>
public sealed class KeyBuilder
{
    /// <summary>The two bytes that end a text or bytes part.</summary>
    internal const byte Escape = 0x00;
    internal const byte EscapedZero = 0xFF;
    internal const byte Terminator = 0x00;

    private readonly ArrayBufferWriter<byte> _buffer = new(32);

    /// <summary>Bytes in the key so far.</summary>
    public int Length => _buffer.WrittenCount;

    /// <summary>Appends a 64-bit integer (8 bytes).</summary>
    public KeyBuilder Add(long value)
    {
        BinaryPrimitives.WriteUInt64BigEndian(_buffer.GetSpan(sizeof(long)), (ulong)value ^ Keys.SignBit64);
        _buffer.Advance(sizeof(long));
        return this;
    }

    /// <summary>Appends a 32-bit integer (4 bytes).</summary>
    public KeyBuilder Add(int value)
    {
        BinaryPrimitives.WriteUInt32BigEndian(_buffer.GetSpan(sizeof(int)), (uint)value ^ Keys.SignBit32);
        _buffer.Advance(sizeof(int));
        return this;
    }

    /// <summary>Appends an unsigned 64-bit integer (8 bytes).</summary>
    public KeyBuilder Add(ulong value)
    {
        BinaryPrimitives.WriteUInt64BigEndian(_buffer.GetSpan(sizeof(ulong)), value);
        _buffer.Advance(sizeof(ulong));
        return this;
    }

    /// <summary>Appends text as UTF-8, escaped and terminated.</summary>
    public KeyBuilder Add(string value)
    {
        ArgumentNullException.ThrowIfNull(value);
        var byteCount = Encoding.UTF8.GetByteCount(value);
        byte[]? rented = null;
        var utf8 = byteCount <= 256 ? stackalloc byte[byteCount] : (rented = ArrayPool<byte>.Shared.Rent(byteCount)).AsSpan(0, byteCount);
        Encoding.UTF8.GetBytes(value, utf8);
        Add(utf8);
        if (rented is not null) ArrayPool<byte>.Shared.Return(rented);
        return this;
    }

    /// <summary>Appends bytes, escaped and terminated.</summary>
    public KeyBuilder Add(ReadOnlySpan<byte> value)
    {
        var destination = _buffer.GetSpan(value.Length * 2 + 2);
        var written = 0;
        foreach (var b in value)
        {
            destination[written++] = b;
            if (b == Escape) destination[written++] = EscapedZero;
        }
        destination[written++] = Escape;
        destination[written++] = Terminator;
        _buffer.Advance(written);
        return this;
    }

    /// <summary>The key so far, without a copy; valid until the builder is changed.</summary>
    public ReadOnlySpan<byte> AsSpan() => _buffer.WrittenSpan;

    /// <summary>A copy of the key so far.</summary>
    public byte[] ToArray() => _buffer.WrittenSpan.ToArray();

    /// <summary>Empties the builder, to build another key.</summary>
    public KeyBuilder Clear()
    {
        _buffer.ResetWrittenCount();
        return this;
    }
}

/// <summary>Reads the parts of a key made by <see cref="KeyBuilder"/>, in the order they were added.</summary>
/// <param name="key">The key.</param>
public ref struct KeyReader(ReadOnlySpan<byte> key)
{
    private ReadOnlySpan<byte> _rest = key;

    /// <summary>Whether every part was read.</summary>
    public readonly bool End => _rest.IsEmpty;

    /// <summary>Reads a part added as a 64-bit integer.</summary>
    /// <exception cref="FormatException">Fewer than 8 bytes are left.</exception>
    public long ReadInt64() => (long)(BinaryPrimitives.ReadUInt64BigEndian(Take(sizeof(long))) ^ Keys.SignBit64);

    /// <summary>Reads a part added as a 32-bit integer.</summary>
    /// <exception cref="FormatException">Fewer than 4 bytes are left.</exception>
    public int ReadInt32() => (int)(BinaryPrimitives.ReadUInt32BigEndian(Take(sizeof(int))) ^ Keys.SignBit32);

    /// <summary>Reads a part added as an unsigned 64-bit integer.</summary>
    /// <exception cref="FormatException">Fewer than 8 bytes are left.</exception>
    public ulong ReadUInt64() => BinaryPrimitives.ReadUInt64BigEndian(Take(sizeof(ulong)));

    /// <summary>Reads a part added as text.</summary>
    /// <exception cref="FormatException">The part is not terminated, badly escaped, or not UTF-8.</exception>
    public string ReadString()
    {
        var bytes = ReadBytes();
        try
        {
            return Keys.StrictUtf8.GetString(bytes);
        }
        catch (DecoderFallbackException e)
        {
            throw new FormatException("The key part is not valid UTF-8.", e);
        }
    }

    /// <summary>Reads a part added as bytes.</summary>
    /// <exception cref="FormatException">The part is not terminated or badly escaped.</exception>
    public byte[] ReadBytes()
    {
        var bytes = new List<byte>(Math.Min(_rest.Length, 64));
        for (var i = 0; i < _rest.Length; i++)
        {
            if (_rest[i] != KeyBuilder.Escape)
            {
                bytes.Add(_rest[i]);
                continue;
            }
            if (i + 1 >= _rest.Length) break;
            if (_rest[i + 1] == KeyBuilder.EscapedZero)
            {
                bytes.Add(0);
                i++;
                continue;
            }
            if (_rest[i + 1] != KeyBuilder.Terminator) throw new FormatException($"A 0x00 byte of the key part is followed by 0x{_rest[i + 1]:x2}, neither an escaped zero nor the end of the part.");
            _rest = _rest[(i + 2)..];
            return [.. bytes];
        }
        throw new FormatException("The key part has no end: it was not added as text or bytes, or the key was cut short.");
    }

    private ReadOnlySpan<byte> Take(int length)
    {
        if (_rest.Length < length) throw new FormatException($"The key has {_rest.Length} bytes left, fewer than the {length} of the part asked for.");
        var part = _rest[..length];
        _rest = _rest[length..];
        return part;
    }
}
