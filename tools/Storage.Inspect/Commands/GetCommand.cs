using System.CommandLine;
using System.Text.Json;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary>Called once per entry in key order; returns false to stop.</summary>
/// <param name="key">The entry's key.</param>
/// <param name="value">The entry's value.</param>
internal delegate bool EntryVisitor(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value);

/// <summary>Trees and entries of a snapshot, for the commands that read them.</summary>
internal static class Entries
{
    /// <summary>The tree of that name, or a one-line error.</summary>
    public static SnapshotTree FindTree(EnvironmentSnapshot snapshot, string name) =>
        snapshot.ListTrees().FirstOrDefault(t => t.Name == name) ?? throw new InspectionException($"there is no tree named '{name}'");

    /// <summary>
    /// Visits the tree's entries in key order until <paramref name="visitor"/> returns false. The snapshot reader has no
    /// seek, so the entries before the first wanted one are read too.
    /// </summary>
    public static void Visit(EnvironmentSnapshot snapshot, SnapshotTree tree, EntryVisitor visitor)
    {
        try
        {
            snapshot.ForEachEntry(tree, (key, value) =>
            {
                if (!visitor(key, value)) throw new Stop();
            });
        }
        catch (Stop)
        {
        }
    }

    /// <summary>One entry as JSON output shows it: the key, the value, and how each was rendered.</summary>
    public static object ToJson(Rendered key, Rendered value, int valueBytes) => new
    {
        key = key.Plain,
        keyFormat = key.FormatName,
        value = value.JsonValue,
        valueFormat = value.FormatName,
        valueBytes,
    };

    /// <summary>Ends a walk early.</summary>
    private sealed class Stop : Exception;
}

/// <summary><c>get &lt;dir&gt; &lt;tree&gt; &lt;key&gt;</c>: the value of one key, rendered (<see cref="Values"/>); exit 1 when the key is missing.</summary>
internal static class GetCommand
{
    public static Command Create()
    {
        var directory = Cli.DirectoryArgument();
        var tree = TreeArgument();
        var key = new Argument<KeyArgument>("key")
        {
            Description = "The key: text (its UTF-8 bytes), or hex:0a0b... for bytes (text:... for text that starts with 'hex:').",
            CustomParser = Cli.ParseKey,
        };
        var json = Cli.JsonOption();
        var hex = HexOption();
        var command = new Command("get", "The value of one key: as text when it is printable UTF-8, as compact JSON when it is a JSON object or array, as hex otherwise. Exit 1 when the key is missing.")
        {
            directory,
            tree,
            key,
            json,
            hex,
        };
        command.SetAction(parse => Run(parse.GetRequiredValue(directory), parse.GetRequiredValue(tree), parse.GetRequiredValue(key).Bytes, parse.GetValue(json), parse.GetValue(hex), parse.InvocationConfiguration.Output));
        return command;
    }

    /// <summary>The tree argument of get and scan.</summary>
    internal static Argument<string> TreeArgument() => new("tree") { Description = "The tree's name." };

    /// <summary>The --hex flag of get and scan.</summary>
    internal static Option<bool> HexOption() => new("--hex") { Description = "Show keys and values as hex whatever they hold." };

    public static int Run(string directory, string treeName, byte[] key, bool json, bool hex, TextWriter output)
    {
        using var snapshot = EnvironmentSnapshot.Open(directory);
        var tree = Entries.FindTree(snapshot, treeName);
        byte[]? found = null;
        Entries.Visit(snapshot, tree, (k, v) =>
        {
            var order = k.SequenceCompareTo(key);
            if (order == 0) found = v.ToArray();
            return order < 0;
        });
        var shownKey = Values.Render(key, allowJson: false, forceHex: hex);
        if (found is null) throw new InspectionException($"key not found: {shownKey.Shown} (tree '{treeName}')");
        var value = Values.Render(found, forceHex: hex);
        if (json) Output.Json(output, Entries.ToJson(shownKey, value, found.Length));
        else output.WriteLine(value.Shown);
        return Cli.Ok;
    }
}

/// <summary>
/// <c>scan &lt;dir&gt; &lt;tree&gt; [--prefix P] [--from K] [--to K] [--limit N]</c>: keys and values in key order, one
/// entry a line (key, a tab, value), of the keys with a prefix and in the range [from, to).
/// </summary>
internal static class ScanCommand
{
    private static readonly JsonSerializerOptions s_compact = new()
    {
        WriteIndented = false,
        Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping,
    };

    public static Command Create()
    {
        var directory = Cli.DirectoryArgument();
        var tree = GetCommand.TreeArgument();
        var prefix = KeyOption("--prefix", "P", "Only keys that start with this.");
        var from = KeyOption("--from", "K", "Only keys from this one on (inclusive).");
        var to = KeyOption("--to", "K", "Only keys before this one (exclusive).");
        var limit = new Option<long?>("--limit")
        {
            Description = "At most this many entries.",
            HelpName = "N",
            CustomParser = result => Cli.ParseNumber(result, "a limit (a whole number of at least 1)", 1),
        };
        var json = Cli.JsonOption();
        var hex = GetCommand.HexOption();
        var command = new Command("scan", "Keys and values in key order, one entry a line (key, tab, value), rendered as get renders them; a prefix, a range [from, to), a limit. Keys are text, or hex:0a0b... for bytes.")
        {
            directory,
            tree,
            prefix,
            from,
            to,
            limit,
            json,
            hex,
        };
        command.SetAction(parse => Run(parse.GetRequiredValue(directory), parse.GetRequiredValue(tree),
            new ScanRange(parse.GetValue(prefix)?.Bytes, parse.GetValue(from)?.Bytes, parse.GetValue(to)?.Bytes, parse.GetValue(limit) ?? long.MaxValue),
            parse.GetValue(json), parse.GetValue(hex), parse.InvocationConfiguration.Output));
        return command;
    }

    /// <summary>Which entries a scan prints: keys with <see cref="Prefix"/>, in [<see cref="From"/>, <see cref="To"/>), at most <see cref="Limit"/>.</summary>
    internal sealed record ScanRange(byte[]? Prefix, byte[]? From, byte[]? To, long Limit);

    public static int Run(string directory, string treeName, ScanRange range, bool json, bool hex, TextWriter output)
    {
        using var snapshot = EnvironmentSnapshot.Open(directory);
        var tree = Entries.FindTree(snapshot, treeName);
        if (json) output.WriteLine("[");
        long count = 0;
        Entries.Visit(snapshot, tree, (key, value) =>
        {
            if (count >= range.Limit) return false;
            if (range.To is { } to && key.SequenceCompareTo(to) >= 0) return false;
            if (range.Prefix is { } prefix && !key.StartsWith(prefix))
            {
                // Keys with the prefix come right after the prefix itself: past them, the scan is over.
                return key.SequenceCompareTo(prefix) < 0;
            }
            if (range.From is { } from && key.SequenceCompareTo(from) < 0) return true;
            var shownKey = Values.Render(key, allowJson: false, forceHex: hex);
            var shownValue = Values.Render(value, forceHex: hex);
            if (json)
            {
                // One entry a line, so that the output is valid JSON and can be read as it comes.
                if (count > 0) output.WriteLine(",");
                output.Write("  ");
                output.Write(JsonSerializer.Serialize(Entries.ToJson(shownKey, shownValue, value.Length), s_compact));
            }
            else
            {
                output.WriteLine($"{shownKey.Shown}\t{shownValue.Shown}");
            }
            count++;
            return count < range.Limit;
        });
        if (json)
        {
            if (count > 0) output.WriteLine();
            output.WriteLine("]");
        }
        return Cli.Ok;
    }

    private static Option<KeyArgument> KeyOption(string name, string helpName, string description) => new(name)
    {
        Description = description + " Text, or hex:0a0b... for bytes.",
        HelpName = helpName,
        CustomParser = Cli.ParseKey,
    };
}
