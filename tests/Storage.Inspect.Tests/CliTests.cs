using System.Reflection;
using System.Text.RegularExpressions;
using static Storage.Inspect.Tests.TestEnvironments;

namespace Storage.Inspect.Tests;

/// <summary>The command line itself: help, version, and bad usage, for every command.</summary>
public class CliTests
{
    /// <summary>Every command and its usage line, as its help and the README show it.</summary>
    public static readonly TheoryData<string, string> Usages = new()
    {
        { "check", "storage-inspect check <dir> [options]" },
        { "info", "storage-inspect info <dir> [options]" },
        { "trees", "storage-inspect trees <dir> [options]" },
        { "stat", "storage-inspect stat <dir> [options]" },
        { "pages", "storage-inspect pages <dir> [options]" },
        { "page", "storage-inspect page <dir> <N> [options]" },
        { "get", "storage-inspect get <dir> <tree> <key> [options]" },
        { "scan", "storage-inspect scan <dir> <tree> [options]" },
        { "dump", "storage-inspect dump <dir> [options]" },
        { "load", "storage-inspect load <dump> <target-dir> [options]" },
        { "journals", "storage-inspect journals <dir> [options]" },
        { "group", "storage-inspect group <root-dir> [<branch-dir>...] [options]" },
        { "freespace", "storage-inspect freespace <dir> [options]" },
        { "map", "storage-inspect map <dir> [options]" },
        { "memory", "storage-inspect memory [<dir>] [options]" },
        { "copy", "storage-inspect copy <dir> <target> [options]" },
        { "backup", "storage-inspect backup <dir> <backup-dir> [options]" },
        { "restore", "storage-inspect restore <target> <backup>... [options]" },
        { "archive", "storage-inspect archive <archive-dir> [options]" },
        { "verify", "storage-inspect verify <backup-file> [options]" },
    };

    [Fact]
    public void The_usage_table_names_every_command()
    {
        var names = Cli.CreateRoot().Subcommands.Select(c => c.Name).Order(StringComparer.Ordinal);
        Assert.Equal(Usages.Select(row => row.Data.Item1).Order(StringComparer.Ordinal), names);
    }

    [Theory]
    [MemberData(nameof(Usages))]
    public void Help_of_every_command_shows_its_usage_arguments_and_options_with_descriptions(string command, string usage)
    {
        Assert.Equal(0, Run(out var help, out var err, command, "--help"));
        Assert.Equal("", err);
        help = help.ReplaceLineEndings("\n");
        Assert.Contains($"Usage:\n  {usage}\n", help);
        var flat = Flatten(help);
        var symbol = Cli.CreateRoot().Subcommands.Single(c => c.Name == command);
        Assert.Contains(Flatten(symbol.Description!), flat);
        foreach (var argument in symbol.Arguments)
        {
            Assert.False(string.IsNullOrWhiteSpace(argument.Description), $"{command} <{argument.Name}> has no description");
            Assert.Contains($"<{argument.Name}> {Flatten(argument.Description!)}", flat);
        }
        foreach (var option in symbol.Options.Where(o => o.Name != "--help"))
        {
            Assert.False(string.IsNullOrWhiteSpace(option.Description), $"{command} {option.Name} has no description");
            Assert.Contains(option.Name, flat);
            Assert.Contains(Flatten(option.Description!), flat);
        }
        Assert.Contains("-h, --help Show help and usage information", flat);

        // -h and 'help <command>' say the same.
        Assert.Equal(0, Run(out var shortHelp, out _, command, "-h"));
        Assert.Equal(help, shortHelp.ReplaceLineEndings("\n"));
        Assert.Equal(0, Run(out var helpWord, out _, "help", command));
        Assert.Equal(help, helpWord.ReplaceLineEndings("\n"));
        Assert.Equal(usage, Cli.UsageLine(command));
    }

    [Fact]
    public void Help_of_the_tool_lists_every_command_and_the_exit_codes()
    {
        Assert.Equal(0, Run(out var help, out var err, "--help"));
        Assert.Equal("", err);
        help = help.ReplaceLineEndings("\n");
        Assert.Contains("Usage:\n  storage-inspect [command] [options]\n", help);
        Assert.Contains("--version", help);
        Assert.Contains("Exit codes: 0 success", Flatten(help));
        foreach (var row in Usages)
        {
            Assert.Matches(new Regex($"\n  {row.Data.Item1} [^\n]*", RegexOptions.None), help);
        }
        Assert.Equal(0, Run(out var shortHelp, out _, "-h"));
        Assert.Equal(help, shortHelp.ReplaceLineEndings("\n"));
        Assert.Equal(0, Run(out var helpWord, out _, "help"));
        Assert.Equal(help, helpWord.ReplaceLineEndings("\n"));
    }

    [Fact]
    public void Version_prints_the_informational_version_without_the_commit()
    {
        Assert.Equal(0, Run(out var text, out var err, "--version"));
        Assert.Equal("", err);
        var informational = typeof(Cli).Assembly.GetCustomAttribute<AssemblyInformationalVersionAttribute>()!.InformationalVersion;
        Assert.Equal(informational.Split('+')[0] + Environment.NewLine, text);
        Assert.Matches(@"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?\r?\n$", text);

        Assert.Equal(2, Run(out _, out err, "--version", "check"));
        Assert.StartsWith("error: --version option cannot be combined with other arguments", err);
        Assert.Contains("usage: storage-inspect [command] [options]", err);
        // Commands have no --version of their own.
        Assert.Equal(2, Run(out _, out err, "info", "--version", "/tmp"));
        Assert.StartsWith("error: unknown option '--version'", err);
    }

    [Theory]
    [MemberData(nameof(Usages))]
    public void An_unknown_option_is_bad_usage(string command, string usage)
    {
        Assert.Equal(2, Run(out var text, out var err, command, "--bogus", "/nonexistent/dir"));
        Assert.Equal("", text);
        Assert.Equal([$"error: unknown option '--bogus'", $"usage: {usage}"], Lines(err));
        // Wherever it stands.
        Assert.Equal(2, Run(out _, out err, command, "/nonexistent/dir", "-x"));
        Assert.Equal($"error: unknown option '-x'", Lines(err)[0]);
    }

    [Theory]
    [MemberData(nameof(Usages))]
    public void A_missing_argument_is_bad_usage(string command, string usage)
    {
        Assert.Equal(2, Run(out var text, out var err, command));
        Assert.Equal("", text);
        var first = Cli.CreateRoot().Subcommands.Single(c => c.Name == command).Arguments[0].Name;
        var expected = command == "memory" ? "error: expected <dir> (or --pid N)" : $"error: Required argument '{first}' missing for command: '{command}'.";
        Assert.Equal([expected, $"usage: {usage}"], Lines(err));
    }

    [Fact]
    public void Other_bad_usage_exits_2_with_one_error_line_and_the_usage()
    {
        AssertUsage(["nonsense"], "error: unknown command 'nonsense'", "storage-inspect [command] [options]");
        AssertUsage([], "error: no command given", "storage-inspect [command] [options]");
        AssertUsage(["help", "nonsense"], "error: unknown command 'nonsense'", "storage-inspect [command] [options]");
        AssertUsage(["nonsense", "--help"], "error: unknown command 'nonsense'", "storage-inspect [command] [options]");
        AssertUsage(["check", "/a", "/b"], "error: Unrecognized command or argument '/b'.", "storage-inspect check <dir> [options]");
        AssertUsage(["page", "/a", "x"], "error: 'x' is not a page number", "storage-inspect page <dir> <N> [options]");
        AssertUsage(["page", "/a", "-1"], "error: unknown option '-1'", "storage-inspect page <dir> <N> [options]");
        AssertUsage(["map", "/a"], "error: Option '--output' is required.", "storage-inspect map <dir> [options]");
        AssertUsage(["copy", "/a", "/b"], "error: only compacting copies are supported: pass --compact", "storage-inspect copy <dir> <target> [options]");
        AssertUsage(["memory", "--pid", "0"], "error: '0' is not a process id", "storage-inspect memory [<dir>] [options]");
        AssertUsage(["memory", "--pid", "4294967297"], "error: '4294967297' is not a process id", "storage-inspect memory [<dir>] [options]");
        AssertUsage(["memory", "--pid", "12", "/a"], "error: give either <dir> or --pid, not both", "storage-inspect memory [<dir>] [options]");
        AssertUsage(["scan", "/a", "t", "--limit", "0"], "error: '0' is not a limit (a whole number of at least 1)", "storage-inspect scan <dir> <tree> [options]");
        AssertUsage(["scan", "/a", "t", "--limit"], "error: Required argument missing for option: '--limit'.", "storage-inspect scan <dir> <tree> [options]");
        AssertUsage(["get", "/a", "t", "hex:0g"], "error: 'hex:0g' is not hex: after 'hex:' come pairs of hex digits (0-9, a-f)", "storage-inspect get <dir> <tree> <key> [options]");
        AssertUsage(["scan", "/a", "t", "--from", "hex:abc"], "error: 'hex:abc' is not hex: after 'hex:' come pairs of hex digits (0-9, a-f)", "storage-inspect scan <dir> <tree> [options]");
    }

    [Fact]
    public void Words_after_a_double_dash_and_option_values_may_start_with_a_dash()
    {
        using var dir = new TempDir();
        using (var env = StorageEnvironment.Open(dir.Path, Quiet))
        {
            using var tx = env.BeginWrite();
            var tree = tx.CreateTree("t");
            tree.Put("-k"u8, "dash"u8);
            tree.Put("k"u8, "plain"u8);
            tx.Commit();
        }
        Assert.Equal(0, Run(out var text, out _, "get", dir.Path, "t", "--", "-k"));
        Assert.Equal("dash\n", text.ReplaceLineEndings("\n"));
        Assert.Equal(0, Run(out text, out _, "scan", dir.Path, "t", "--prefix", "-"));
        Assert.Equal("-k\tdash\n", text.ReplaceLineEndings("\n"));
        Assert.Equal(2, Run(out _, out var err, "get", dir.Path, "t", "-k"));
        Assert.StartsWith("error: unknown option '-k'", err);
    }

    [Fact]
    public void Progress_is_drawn_only_on_the_console()
    {
        Assert.Null(ProgressBar.For(new StringWriter(), new StringWriter()));
        Assert.Null(ProgressBar.For(new StringWriter(), Console.Error));
    }

    private static void AssertUsage(string[] args, string error, string usage)
    {
        Assert.Equal(2, Run(out var text, out var err, args));
        Assert.Equal("", text);
        Assert.Equal([error, $"usage: {usage}"], Lines(err));
    }

    private static string[] Lines(string text) => text.ReplaceLineEndings("\n").TrimEnd('\n').Split('\n');

    /// <summary>Whitespace runs as one space, so that help wrapped at any width still matches.</summary>
    private static string Flatten(string text) => Regex.Replace(text, @"\s+", " ").Trim();
}
