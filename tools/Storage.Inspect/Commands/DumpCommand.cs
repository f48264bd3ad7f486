using System.CommandLine;
using System.Globalization;
using System.Text;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary>
/// <c>dump &lt;dir&gt; [--tree NAME] [--output FILE] [--hex]</c>: a portable text dump in the manner of mdb_dump: per tree a
/// header (<c>VERSION=3</c>, <c>format=...</c>, <c>type=btree</c>, <c>database=NAME</c>, <c>entries=N</c>, <c>HEADER=END</c>),
/// then one line per key and one per value, each a space followed by the key or value, then <c>DATA=END</c>.
/// </summary>
/// <remarks>
/// <c>format=rendered</c> (the default) writes each key and value as text when it is printable UTF-8 (a JSON document on
/// one line is that too, and is written as it is stored) and as <c>hex:</c> and lower-case hex otherwise, with
/// <c>text:</c> before text that starts with one of these prefixes (<see cref="Values"/>); <c>format=bytevalue</c>
/// (<c>--hex</c>) writes every line as lower-case hex, as mdb_dump does. Either way <c>load</c> restores every byte.
/// </remarks>
internal static class DumpCommand
{
    public const string RenderedFormat = "rendered";
    public const string HexFormat = "bytevalue";

    public static Command Create()
    {
        var directory = Cli.DirectoryArgument();
        var tree = new Option<string>("--tree") { Description = "Dump only this tree (default: every tree).", HelpName = "NAME" };
        var file = new Option<string>("--output") { Description = "Write the dump to this file instead of stdout.", HelpName = "FILE" };
        var hex = new Option<bool>("--hex") { Description = "Every key and value as hex (format=bytevalue, as mdb_dump writes), instead of text where it is printable." };
        var command = new Command("dump", "A portable text dump of one tree or all, in the manner of mdb_dump; load reads it back.")
        {
            directory,
            tree,
            file,
            hex,
        };
        command.SetAction(parse => Run(parse.GetRequiredValue(directory), parse.GetValue(tree), parse.GetValue(file), parse.GetValue(hex), parse.InvocationConfiguration.Output, parse.InvocationConfiguration.Error));
        return command;
    }

    public static int Run(string directory, string? only, string? path, bool hex, TextWriter output, TextWriter error)
    {
        using var snapshot = EnvironmentSnapshot.Open(directory);
        var trees = snapshot.ListTrees();
        if (only is not null) trees = [Entries.FindTree(snapshot, only)];
        using var file = path is null ? null : new StreamWriter(path, append: false, new UTF8Encoding(false));
        var writer = file ?? output;
        writer.NewLine = "\n";
        long total = 0;
        foreach (var tree in trees)
        {
            writer.WriteLine("VERSION=3");
            writer.WriteLine($"format={(hex ? HexFormat : RenderedFormat)}");
            writer.WriteLine("type=btree");
            writer.WriteLine($"database={tree.Name}");
            writer.WriteLine($"entries={tree.Entries.ToString(CultureInfo.InvariantCulture)}");
            writer.WriteLine("HEADER=END");
            snapshot.ForEachEntry(tree, (key, value) =>
            {
                writer.Write(' ');
                writer.WriteLine(Line(key, hex));
                writer.Write(' ');
                writer.WriteLine(Line(value, hex));
                total++;
            });
            writer.WriteLine("DATA=END");
        }
        if (file is not null) error.WriteLine($"dumped {trees.Count} trees, {total} entries to {path}");
        return Cli.Ok;
    }

    /// <summary>A data line without its leading space: bare hex in <c>format=bytevalue</c>, text or <c>hex:...</c> in <c>format=rendered</c> (never JSON re-spaced, so that load restores the bytes).</summary>
    private static string Line(ReadOnlySpan<byte> bytes, bool hex) =>
        hex ? Convert.ToHexString(bytes).ToLowerInvariant() : Values.Render(bytes, allowJson: false).Shown;
}

/// <summary>
/// <c>load &lt;dump&gt; &lt;target-dir&gt;</c>: reads a dump (<c>format=rendered</c> or <c>format=bytevalue</c>) and writes its
/// trees into the environment at the target (created when missing).
/// </summary>
internal static class LoadCommand
{
    private const int EntriesPerTransaction = 10_000;

    public static Command Create()
    {
        var dump = new Argument<string>("dump") { Description = "A file that dump wrote." };
        var target = Cli.DirectoryArgument("The environment to load into (created when missing); entries of the same keys are replaced.", "target-dir");
        var command = new Command("load", "Loads a dump into an environment, 10,000 entries per transaction; a malformed dump is reported with its line number.")
        {
            dump,
            target,
        };
        command.SetAction(parse => Run(parse.GetRequiredValue(dump), parse.GetRequiredValue(target), parse.InvocationConfiguration.Output));
        return command;
    }

    public static int Run(string dumpPath, string targetDirectory, TextWriter output)
    {
        if (!File.Exists(dumpPath)) throw new InspectionException($"no dump file at {dumpPath}");
        using var reader = new StreamReader(dumpPath, Encoding.UTF8);
        using var env = StorageEnvironment.Open(targetDirectory);
        var lineNumber = 0;
        var trees = 0;
        long entries = 0;
        string? line;
        while ((line = Next()) is not null)
        {
            if (line.Length == 0) continue;
            if (line != "VERSION=3") throw Bad("expected VERSION=3");
            string? name = null;
            var rendered = false;
            while ((line = Next()) is not null && line != "HEADER=END")
            {
                if (line.StartsWith("database=", StringComparison.Ordinal)) name = line["database=".Length..];
                else if (line == $"format={DumpCommand.RenderedFormat}") rendered = true;
                else if (line.StartsWith("format=", StringComparison.Ordinal) && line != $"format={DumpCommand.HexFormat}") throw Bad($"only format={DumpCommand.RenderedFormat} and format={DumpCommand.HexFormat} are supported");
            }
            if (line is null) throw Bad("the dump ends inside a header");
            if (string.IsNullOrEmpty(name)) throw Bad("the header names no database");
            trees++;
            var tx = env.BeginWrite();
            try
            {
                var tree = tx.OpenOrCreateTree(name);
                var inTransaction = 0;
                while (true)
                {
                    var keyLine = Next() ?? throw Bad("the dump ends before DATA=END");
                    if (keyLine == "DATA=END") break;
                    var valueLine = Next() ?? throw Bad("a key has no value line");
                    if (!keyLine.StartsWith(' ') || !valueLine.StartsWith(' ')) throw Bad("data lines start with a space");
                    tree.Put(Decode(keyLine, rendered), Decode(valueLine, rendered));
                    entries++;
                    if (++inTransaction == EntriesPerTransaction)
                    {
                        tx.Commit();
                        tx.Dispose();
                        tx = env.BeginWrite();
                        tree = tx.OpenTree(name);
                        inTransaction = 0;
                    }
                }
                tx.Commit();
            }
            finally
            {
                tx.Dispose();
            }
        }
        output.WriteLine($"loaded {trees} trees, {entries} entries into {Path.GetFullPath(targetDirectory)}");
        return Cli.Ok;

        string? Next()
        {
            lineNumber++;
            return reader.ReadLine();
        }

        byte[] Decode(string dataLine, bool rendered)
        {
            if (rendered) return Values.Parse(dataLine[1..], out _) ?? throw Bad("a data line is not hex");
            try
            {
                return Convert.FromHexString(dataLine.AsSpan(1));
            }
            catch (FormatException)
            {
                throw Bad("a data line is not hex");
            }
        }

        InspectionException Bad(string what) => new($"{dumpPath}:{lineNumber}: {what}");
    }
}
