using System.Buffers.Binary;

namespace Storage.Benchmarks.Generators;

/// <summary>
/// Values: 100 pseudo-random (incompressible) bytes from a second xorshift64 seeded with 42, filled with
/// consecutive outputs in little-endian order; the unused bytes of the last output are dropped.
/// </summary>
internal sealed class ValueSource
{
    public const ulong Seed = 42;
    public const int ValueSizeBytes = 100;

    private Xorshift64 _generator = new(Seed);

    public void Next(Span<byte> value)
    {
        if (value.Length != ValueSizeBytes) throw new ArgumentException($"A value is {ValueSizeBytes} bytes.", nameof(value));
        Span<byte> word = stackalloc byte[sizeof(ulong)];
        for (var offset = 0; offset < value.Length; offset += sizeof(ulong))
        {
            BinaryPrimitives.WriteUInt64LittleEndian(word, _generator.Next());
            var length = Math.Min(sizeof(ulong), value.Length - offset);
            word[..length].CopyTo(value.Slice(offset, length));
        }
    }
}
