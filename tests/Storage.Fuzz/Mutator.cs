using System.Buffers.Binary;

namespace Storage.Fuzz;

/// <summary>
/// Deterministic byte-level mutations in the manner of AFL's havoc stage (bit flips, interesting values, block
/// copies, inserts, deletes, splices with another seed), for the in-process mutation pass. Same seed, same inputs.
/// </summary>
internal sealed class Mutator(int seed)
{
    private const int MaxInputBytes = 1 << 20;

    private static readonly long[] s_interesting =
    [
        0, 1, -1, 2, 7, 8, 16, 24, 32, 64, 127, 128, 255, 256, 4095, 4096, 8191, 8192, 8193, 32767, 32768, 65535, 65536,
        int.MaxValue, int.MinValue, uint.MaxValue, long.MaxValue, long.MinValue, 1L << 32, 1L << 40,
    ];

    private readonly Random _random = new(seed);

    public byte[] Mutate(byte[] input, IReadOnlyList<byte[]> others)
    {
        var bytes = new List<byte>(input);
        var rounds = 1 << _random.Next(0, 4);
        for (var i = 0; i < rounds; i++) MutateOnce(bytes, others);
        if (bytes.Count > MaxInputBytes) bytes.RemoveRange(MaxInputBytes, bytes.Count - MaxInputBytes);
        return [.. bytes];
    }

    private void MutateOnce(List<byte> bytes, IReadOnlyList<byte[]> others)
    {
        if (bytes.Count == 0)
        {
            bytes.Add((byte)_random.Next(256));
            return;
        }
        // Mostly small changes near the data's start and at its structures: headers sit in the first bytes of pages.
        var at = Position(bytes.Count);
        switch (_random.Next(10))
        {
            case 0:
                bytes[at] ^= (byte)(1 << _random.Next(8));
                break;
            case 1:
                bytes[at] = (byte)_random.Next(256);
                break;
            case 2 or 3:
                WriteInteresting(bytes, at);
                break;
            case 4:
                bytes[at] = (byte)(bytes[at] + _random.Next(-16, 17));
                break;
            case 5:
            {
                var length = Math.Min(bytes.Count - at, 1 + _random.Next(64));
                var from = _random.Next(bytes.Count - length + 1);
                var block = bytes.GetRange(from, length);
                for (var i = 0; i < length && at + i < bytes.Count; i++) bytes[at + i] = block[i];
                break;
            }
            case 6:
                bytes.InsertRange(at, Enumerable.Repeat((byte)_random.Next(256), 1 + _random.Next(32)));
                break;
            case 7:
                bytes.RemoveRange(at, Math.Min(bytes.Count - at, 1 + _random.Next(64)));
                break;
            case 8:
                bytes.RemoveRange(at, bytes.Count - at);
                break;
            default:
            {
                if (others.Count == 0) goto case 1;
                var other = others[_random.Next(others.Count)];
                if (other.Length == 0) break;
                var from = _random.Next(other.Length);
                var length = Math.Min(other.Length - from, 1 + _random.Next(512));
                for (var i = 0; i < length && at + i < bytes.Count; i++) bytes[at + i] = other[from + i];
                break;
            }
        }
    }

    private int Position(int count)
    {
        var position = _random.Next(4) switch
        {
            0 => _random.Next(Math.Min(count, 256)),
            1 => _random.Next(count) & ~4095 | _random.Next(64),
            _ => _random.Next(count),
        };
        return Math.Min(position, count - 1);
    }

    private void WriteInteresting(List<byte> bytes, int at)
    {
        var value = s_interesting[_random.Next(s_interesting.Length)];
        var width = 1 << _random.Next(4);
        Span<byte> encoded = stackalloc byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(encoded, value);
        for (var i = 0; i < width && at + i < bytes.Count; i++) bytes[at + i] = encoded[i];
    }
}
