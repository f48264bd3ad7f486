namespace Storage.Benchmarks.Generators;

/// <summary>Keys are a 64-bit number written as 16 lowercase hex characters, so byte order is numeric order.</summary>
internal static class KeyFormat
{
    public const int KeySizeBytes = 16;

    private static ReadOnlySpan<byte> HexDigits => "0123456789abcdef"u8;

    public static void Write(ulong number, Span<byte> key)
    {
        if (key.Length != KeySizeBytes) throw new ArgumentException($"A key is {KeySizeBytes} bytes.", nameof(key));
        for (var i = KeySizeBytes - 1; i >= 0; i--)
        {
            key[i] = HexDigits[(int)(number & 0xF)];
            number >>= 4;
        }
    }
}
