using System.Text;
using System.Text.Encodings.Web;
using System.Text.Json;

namespace Storage.Inspect;

/// <summary>How a key or value is shown: as text, as compact JSON, or as hex.</summary>
internal enum Rendering
{
    Text,
    Json,
    Hex,
}

/// <summary>A key or value as shown: <see cref="Shown"/> is what the text output prints.</summary>
/// <param name="Shown">Text as is (<c>text:</c> before text that starts with a prefix), compact JSON, or <c>hex:</c> and lower-case hex.</param>
/// <param name="As">Which rendering it is.</param>
/// <param name="Plain">The same without a prefix (the text, the JSON, or the hex digits), for JSON output.</param>
/// <param name="Json">The parsed document of a <see cref="Rendering.Json"/> rendering, for JSON output.</param>
internal sealed record Rendered(string Shown, Rendering As, string Plain, JsonElement? Json = null)
{
    /// <summary>The rendering's name in JSON output: <c>text</c>, <c>json</c> or <c>hex</c>.</summary>
    public string FormatName => As switch
    {
        Rendering.Json => "json",
        Rendering.Hex => "hex",
        _ => "text",
    };

    /// <summary>The value in JSON output: the JSON document itself for a JSON rendering, else the plain string.</summary>
    public object JsonValue => Json is { } element ? element : Plain;
}

/// <summary>A key given on the command line: <c>hex:0a0b</c> for bytes, <c>text:...</c> or anything else for its UTF-8 bytes.</summary>
/// <param name="Bytes">The key's bytes.</param>
/// <param name="Given">As the command line gave it.</param>
internal sealed record KeyArgument(byte[] Bytes, string Given);

/// <summary>
/// Keys and values on the command line and in the output. Printable UTF-8 (no control characters) is shown as text, a
/// value that is a JSON object or array as compact JSON, anything else as <c>hex:</c> followed by lower-case hex. Text
/// that itself starts with <c>hex:</c> or <c>text:</c> is shown after a <c>text:</c> prefix, so that every key the tool
/// prints can be given back to it as it is.
/// </summary>
internal static class Values
{
    public const string HexPrefix = "hex:";
    public const string TextPrefix = "text:";

    private static readonly UTF8Encoding s_strictUtf8 = new(encoderShouldEmitUTF8Identifier: false, throwOnInvalidBytes: true);

    private static readonly JsonWriterOptions s_compact = new() { Indented = false, Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping };

    /// <summary>The bytes of a key or value as written on the command line or in a rendered dump; null with a reason when it is not valid.</summary>
    public static byte[]? Parse(string given, out string? problem)
    {
        problem = null;
        if (given.StartsWith(HexPrefix, StringComparison.Ordinal))
        {
            var digits = given.AsSpan(HexPrefix.Length);
            if (digits.Length % 2 != 0 || !IsHex(digits))
            {
                problem = $"'{given}' is not hex: after '{HexPrefix}' come pairs of hex digits (0-9, a-f)";
                return null;
            }
            return Convert.FromHexString(digits);
        }
        return Encoding.UTF8.GetBytes(given.StartsWith(TextPrefix, StringComparison.Ordinal) ? given[TextPrefix.Length..] : given);
    }

    /// <summary>
    /// A key or value rendered: hex when <paramref name="forceHex"/>; compact JSON when <paramref name="allowJson"/> and the
    /// bytes are a JSON object or array; text when they are printable UTF-8; hex otherwise.
    /// </summary>
    public static Rendered Render(ReadOnlySpan<byte> bytes, bool allowJson = true, bool forceHex = false)
    {
        if (!forceHex)
        {
            if (allowJson && TryCompactJson(bytes, out var compact, out var element)) return new Rendered(compact, Rendering.Json, compact, element);
            if (TryText(bytes, out var text))
            {
                var needsPrefix = text.StartsWith(HexPrefix, StringComparison.Ordinal) || text.StartsWith(TextPrefix, StringComparison.Ordinal);
                return new Rendered(needsPrefix ? TextPrefix + text : text, Rendering.Text, text);
            }
        }
        var hex = Convert.ToHexString(bytes).ToLowerInvariant();
        return new Rendered(HexPrefix + hex, Rendering.Hex, hex);
    }

    /// <summary>Valid UTF-8 without control characters (so without tabs and line breaks).</summary>
    public static bool TryText(ReadOnlySpan<byte> bytes, out string text)
    {
        try
        {
            text = s_strictUtf8.GetString(bytes);
        }
        catch (DecoderFallbackException)
        {
            text = "";
            return false;
        }
        foreach (var c in text)
        {
            if (char.IsControl(c)) return false;
        }
        return true;
    }

    /// <summary>A JSON object or array, on one line without the whitespace between its tokens.</summary>
    public static bool TryCompactJson(ReadOnlySpan<byte> bytes, out string compact, out JsonElement element)
    {
        compact = "";
        element = default;
        var start = 0;
        while (start < bytes.Length && bytes[start] is (byte)' ' or (byte)'\t' or (byte)'\r' or (byte)'\n') start++;
        if (start == bytes.Length || bytes[start] is not ((byte)'{' or (byte)'[')) return false;
        try
        {
            using var document = JsonDocument.Parse(bytes.ToArray());
            using var buffer = new MemoryStream();
            using (var writer = new Utf8JsonWriter(buffer, s_compact))
            {
                document.RootElement.WriteTo(writer);
            }
            compact = Encoding.UTF8.GetString(buffer.GetBuffer(), 0, (int)buffer.Length);
            element = document.RootElement.Clone();
            return true;
        }
        catch (JsonException)
        {
            return false;
        }
    }

    private static bool IsHex(ReadOnlySpan<char> digits)
    {
        foreach (var c in digits)
        {
            if (!char.IsAsciiHexDigit(c)) return false;
        }
        return true;
    }
}
