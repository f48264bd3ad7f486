using System.Text;

namespace Storage.Inspection;

/// <summary>
/// Short renderings of keys and values: in the messages of the checker's problems, and in the inspection tool's output,
/// which compiles this file in (it is formatting, not part of the library's API).
/// </summary>
internal static class Hex
{
    /// <summary>A short form: up to 32 bytes of hex, with the printable form when all bytes are printable ASCII.</summary>
    public static string Preview(ReadOnlySpan<byte> bytes, int maxBytes = 32)
    {
        var shown = bytes.Length > maxBytes ? bytes[..maxBytes] : bytes;
        var hex = "0x" + Convert.ToHexString(shown).ToLowerInvariant() + (bytes.Length > maxBytes ? "…" : "");
        return IsPrintable(bytes) && bytes.Length > 0 ? $"\"{Encoding.ASCII.GetString(shown)}{(bytes.Length > maxBytes ? "…" : "")}\"" : hex;
    }

    /// <summary>Printable ASCII with '.' for anything else.</summary>
    public static string Printable(ReadOnlySpan<byte> bytes)
    {
        var builder = new StringBuilder(bytes.Length);
        foreach (var b in bytes) builder.Append(b is >= 0x20 and < 0x7f ? (char)b : '.');
        return builder.ToString();
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
