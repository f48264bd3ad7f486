using System.Text;

namespace Storage.Inspection;

/// <summary>Short renderings of keys in the messages of problems.</summary>
internal static class Hex
{
    /// <summary>A short form: up to 32 bytes of hex, with the printable form when all bytes are printable ASCII.</summary>
    public static string Preview(ReadOnlySpan<byte> bytes, int maxBytes = 32)
    {
        var shown = bytes.Length > maxBytes ? bytes[..maxBytes] : bytes;
        var hex = "0x" + Convert.ToHexString(shown).ToLowerInvariant() + (bytes.Length > maxBytes ? "…" : "");
        return IsPrintable(bytes) && bytes.Length > 0 ? $"\"{Encoding.ASCII.GetString(shown)}{(bytes.Length > maxBytes ? "…" : "")}\"" : hex;
    }

    public static bool IsPrintable(ReadOnlySpan<byte> bytes)
    {
        foreach (var b in bytes)
        {
            if (b is < 0x20 or >= 0x7f) return false;
        }
        return true;
    }
}
