using System.Text.Json;
using Storage.Inspect.Commands;
using Storage.Inspection;

namespace Storage.Inspect;

/// <summary>
/// The command line: <c>storage-inspect &lt;command&gt; [options] &lt;arguments&gt;</c>. Exit codes: 0 success (and, for
/// <c>check</c>, consistent), 1 problems found or the environment cannot be read, 2 bad usage.
/// </summary>
internal static class Cli
{
    public const int Ok = 0;
    public const int Problems = 1;
    public const int Usage = 2;

    private static readonly (string Name, string Arguments, string Summary, Func<ParsedArgs, TextWriter, TextWriter, int> Run)[] s_commands =
    [
        ("check", "<dir>", "full consistency check (exit 0 consistent, 1 problems)", CheckCommand.Run),
        ("info", "<dir>", "format, page size, files, header slots, journals, lock", InfoCommand.Run),
        ("trees", "<dir>", "every tree: entries, depth, pages, bytes used", TreesCommand.Run),
        ("stat", "<dir>", "environment totals and free pages by section", StatCommand.Run),
        ("pages", "<dir>", "one row per page: id, type, tree, items, overflow", PagesCommand.Run),
        ("page", "<dir> <N>", "decode one page: header, nodes, keys", PageCommand.Run),
        ("dump", "[--tree NAME] <dir>", "portable text dump of one tree or all (to stdout or --output)", DumpCommand.Run),
        ("load", "<dump> <target-dir>", "load a dump into a (new) environment", LoadCommand.Run),
        ("journals", "<dir>", "journal files: transactions, entries, sizes, checksums, links", JournalsCommand.Run),
        ("group", "<root-dir> <branch-dir>...", "an environment group: members, shared files and their links, each member checked", GroupCommand.Run),
        ("freespace", "<dir>", "free space per section", FreeSpaceCommand.Run),
        ("map", "--output FILE.svg <dir>", "a picture of the data file's pages as SVG", MapCommand.Run),
        ("memory", "[--pid N] [<dir>]", "smaps_rollup of a process, or of this tool with the environment open", MemoryCommand.Run),
        ("copy", "--compact <dir> <target>", "compacting copy into a new directory", CopyCommand.Run),
    ];

    /// <summary>Runs one command; never throws for bad input or damaged files.</summary>
    public static int Run(string[] args, TextWriter output, TextWriter error)
    {
        ArgumentNullException.ThrowIfNull(args);
        ArgumentNullException.ThrowIfNull(output);
        ArgumentNullException.ThrowIfNull(error);
        if (args.Length == 0 || args[0] is "-h" or "--help" or "help")
        {
            PrintUsage(args.Length == 0 ? error : output);
            return args.Length == 0 ? Usage : Ok;
        }
        var command = s_commands.FirstOrDefault(c => c.Name == args[0]);
        if (command.Name is null)
        {
            error.WriteLine($"error: unknown command '{args[0]}'");
            PrintUsage(error);
            return Usage;
        }
        ParsedArgs parsed;
        try
        {
            parsed = ParsedArgs.Parse(args.AsSpan(1));
        }
        catch (UsageException e)
        {
            error.WriteLine($"error: {e.Message}");
            error.WriteLine($"usage: storage-inspect {command.Name} {command.Arguments}");
            return Usage;
        }
        try
        {
            return command.Run(parsed, output, error);
        }
        catch (UsageException e)
        {
            error.WriteLine($"error: {e.Message}");
            error.WriteLine($"usage: storage-inspect {command.Name} {command.Arguments}");
            return Usage;
        }
        catch (InspectionException e)
        {
            error.WriteLine($"error: {e.Message}");
            return Problems;
        }
        catch (StorageException e)
        {
            error.WriteLine($"error: {OneLine(e.Message)}");
            return Problems;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or JsonException or FormatException or ArgumentException or InvalidDataException)
        {
            error.WriteLine($"error: {OneLine(e.Message)}");
            return Problems;
        }
    }

    private static string OneLine(string message) => message.ReplaceLineEndings(" ");

    private static void PrintUsage(TextWriter writer)
    {
        writer.WriteLine("usage: storage-inspect <command> [--json] <arguments>");
        foreach (var (name, arguments, summary, _) in s_commands)
        {
            writer.WriteLine($"  {name,-10} {arguments,-28} {summary}");
        }
        writer.WriteLine("Reading commands never write to the environment and take no lock; --json prints JSON.");
    }
}

/// <summary>Bad command-line arguments.</summary>
internal sealed class UsageException(string message) : Exception(message);

/// <summary>Options (<c>--name value</c> or flags) and positional arguments.</summary>
internal sealed class ParsedArgs
{
    private static readonly HashSet<string> s_flags = ["--json", "--compact", "--force"];
    private static readonly HashSet<string> s_valued = ["--tree", "--output", "--pid"];

    public List<string> Positional { get; } = [];

    public Dictionary<string, string> Options { get; } = [];

    public HashSet<string> Flags { get; } = [];

    public bool Json => Flags.Contains("--json");

    public static ParsedArgs Parse(ReadOnlySpan<string> args)
    {
        var parsed = new ParsedArgs();
        for (var i = 0; i < args.Length; i++)
        {
            var arg = args[i];
            if (s_flags.Contains(arg))
            {
                parsed.Flags.Add(arg);
            }
            else if (s_valued.Contains(arg))
            {
                if (i + 1 >= args.Length) throw new UsageException($"{arg} needs a value");
                parsed.Options[arg] = args[++i];
            }
            else if (arg.StartsWith("--", StringComparison.Ordinal))
            {
                throw new UsageException($"unknown option {arg}");
            }
            else
            {
                parsed.Positional.Add(arg);
            }
        }
        return parsed;
    }

    /// <summary>The positional arguments, exactly <paramref name="count"/> of them.</summary>
    public IReadOnlyList<string> Expect(int count, string names)
    {
        if (Positional.Count != count) throw new UsageException($"expected {names}");
        return Positional;
    }

    public string? Option(string name) => Options.TryGetValue(name, out var value) ? value : null;
}
