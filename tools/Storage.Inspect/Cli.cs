using System.CommandLine;
using System.CommandLine.Help;
using System.CommandLine.Invocation;
using System.CommandLine.Parsing;
using System.Globalization;
using System.Reflection;
using System.Text.Json;
using Storage.Inspect.Commands;
using Storage.Inspection;

namespace Storage.Inspect;

/// <summary>
/// The command line: <c>storage-inspect &lt;command&gt; &lt;arguments&gt; [options]</c>, parsed by System.CommandLine. Exit
/// codes: 0 success (and, for <c>check</c>, consistent), 1 problems found or the environment cannot be read, 2 bad usage.
/// </summary>
internal static class Cli
{
    public const int Ok = 0;
    public const int Problems = 1;
    public const int Usage = 2;

    /// <summary>The command's name, as installed.</summary>
    public const string Name = "storage-inspect";

    /// <summary>No response files: an argument that starts with '@' is a path or a key like any other.</summary>
    private static readonly ParserConfiguration s_parser = new() { ResponseFileTokenReplacer = null };

    /// <summary>The tool's version: the assembly's informational version without a <c>+commit</c> suffix.</summary>
    public static string Version
    {
        get
        {
            var assembly = typeof(Cli).Assembly;
            var version = assembly.GetCustomAttribute<AssemblyInformationalVersionAttribute>()?.InformationalVersion
                ?? assembly.GetName().Version?.ToString()
                ?? "0.0.0";
            var plus = version.IndexOf('+', StringComparison.Ordinal);
            return plus < 0 ? version : version[..plus];
        }
    }

    /// <summary>Runs one command; never throws for bad input or damaged files.</summary>
    public static int Run(string[] args, TextWriter output, TextWriter error)
    {
        ArgumentNullException.ThrowIfNull(args);
        ArgumentNullException.ThrowIfNull(output);
        ArgumentNullException.ThrowIfNull(error);
        try
        {
            return Execute(args, output, error);
        }
        catch (UsageException e)
        {
            error.WriteLine($"error: {OneLine(e.Message)}");
            error.WriteLine($"usage: {UsageLine(e.CommandName)}");
            return Usage;
        }
        catch (InspectionException e)
        {
            error.WriteLine($"error: {OneLine(e.Message)}");
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

    /// <summary>
    /// Parses and runs one command, letting its exceptions through: a command line the parser rejects is a
    /// <see cref="UsageException"/>, and a command's failure is the exception it threw.
    /// </summary>
    internal static int Execute(string[] args, TextWriter output, TextWriter error)
    {
        ArgumentNullException.ThrowIfNull(args);
        // 'help' and 'help <command>' are --help in other words.
        if (args is ["help", .. var rest]) args = [.. rest, "--help"];
        var parse = CreateRoot().Parse(args, s_parser);
        if (parse.Action is HelpAction && parse.CommandResult.Command is RootCommand && parse.UnmatchedTokens.Count > 0)
        {
            throw new UsageException($"unknown command '{parse.UnmatchedTokens[0]}'");
        }
        if (parse.Action is not HelpAction)
        {
            var command = parse.CommandResult.Command;
            // An error of --version (which only the root has) is the tool's, whatever command follows it.
            var commandName = command is RootCommand || parse.Errors.Any(e => e.SymbolResult is OptionResult { Option: VersionOption }) ? null : command.Name;
            if (UnknownOption(parse) is { } unknown) throw new UsageException($"unknown option '{unknown}'", commandName);
            if (parse.Errors.Count > 0)
            {
                // A missing or malformed argument first, then what the options and the command's own checks say.
                var first = parse.Errors.FirstOrDefault(e => e.SymbolResult is ArgumentResult) ?? parse.Errors[0];
                var message = command is not RootCommand ? first.Message
                    : parse.UnmatchedTokens.Count > 0 ? $"unknown command '{parse.UnmatchedTokens[0]}'"
                    : first.Message.StartsWith("Required command", StringComparison.Ordinal) ? "no command given"
                    : first.Message;
                throw new UsageException(message, commandName);
            }
        }
        return parse.Invoke(new InvocationConfiguration
        {
            Output = output,
            Error = error,
            EnableDefaultExceptionHandler = false,
            ProcessTerminationTimeout = null,
        });
    }

    /// <summary>Every command, with <c>--help</c> (and <c>-h</c>) on each and <c>--version</c> on the root.</summary>
    internal static RootCommand CreateRoot()
    {
        var root = new RootCommand(
            "Looks inside a Storage environment on disk. Reading commands never write to the environment and take no lock. " +
            "Exit codes: 0 success (for check: consistent), 1 problems found or the environment cannot be read, 2 bad usage.")
        {
            // The installed command's name, also under a host whose executable has another (a test runner).
            HelpName = Name,
        };
        // Only --help and -h: '/h' and '/?' are paths.
        for (var i = 0; i < root.Options.Count; i++)
        {
            if (root.Options[i] is HelpOption) root.Options[i] = new HelpOption("--help", "-h");
            else if (root.Options[i] is VersionOption version) version.Action = new VersionAction();
        }
        Command[] commands =
        [
            CheckCommand.Create(),
            InfoCommand.Create(),
            TreesCommand.Create(),
            StatCommand.Create(),
            PagesCommand.Create(),
            PageCommand.Create(),
            GetCommand.Create(),
            ScanCommand.Create(),
            DumpCommand.Create(),
            LoadCommand.Create(),
            JournalsCommand.Create(),
            GroupCommand.Create(),
            FreeSpaceCommand.Create(),
            MapCommand.Create(),
            MemoryCommand.Create(),
            CopyCommand.Create(),
            BackupCommands.CreateBackup(),
            BackupCommands.CreateRestore(),
            BackupCommands.CreateVerify(),
            BackupCommands.CreateArchive(),
        ];
        foreach (var command in commands) root.Subcommands.Add(command);
        return root;
    }

    /// <summary>The usage line of a command (or of the tool, for null), as its help shows it.</summary>
    internal static string UsageLine(string? commandName)
    {
        var help = new StringWriter();
        var root = CreateRoot();
        // One line however narrow the terminal.
        foreach (var option in root.Options)
        {
            if (option is HelpOption { Action: HelpAction action }) action.MaxWidth = int.MaxValue;
        }
        root.Parse(commandName is null ? ["--help"] : [commandName, "--help"], s_parser)
            .Invoke(new InvocationConfiguration { Output = help, Error = TextWriter.Null, ProcessTerminationTimeout = null });
        var lines = help.ToString().ReplaceLineEndings("\n").Split('\n');
        var usage = Array.IndexOf(lines, "Usage:");
        return usage >= 0 && usage + 1 < lines.Length ? lines[usage + 1].Trim() : $"{Name} <command> [options]";
    }

    /// <summary>The environment directory, the first argument of most commands.</summary>
    internal static Argument<string> DirectoryArgument(string description = "The environment's directory (holding data.storage and Journals/).", string name = "dir") =>
        new(name) { Description = description };

    /// <summary>The <c>--json</c> flag of a command that reports.</summary>
    /// <summary>A command of one directory and <c>--json</c>, run by <paramref name="run"/> (directory, json, output, error; returns the exit code).</summary>
    internal static Command DirectoryCommand(string name, string description, Func<string, bool, TextWriter, TextWriter, int> run)
    {
        var directory = DirectoryArgument();
        var json = JsonOption();
        var command = new Command(name, description) { directory, json };
        command.SetAction(parse => run(parse.GetRequiredValue(directory), parse.GetValue(json), parse.InvocationConfiguration.Output, parse.InvocationConfiguration.Error));
        return command;
    }

    internal static Option<bool> JsonOption() => new("--json") { Description = "Print JSON instead of text." };

    /// <summary>An option or argument that is a whole number from <paramref name="minimum"/> to <paramref name="maximum"/>.</summary>
    internal static long? ParseNumber(ArgumentResult result, string what, long minimum, long maximum = long.MaxValue)
    {
        var token = result.Tokens.Count > 0 ? result.Tokens[0].Value : "";
        if (long.TryParse(token, NumberStyles.None, CultureInfo.InvariantCulture, out var value) && value >= minimum && value <= maximum) return value;
        result.AddError($"'{token}' is not {what}");
        return null;
    }

    /// <summary>
    /// Whether every required argument of the command was given: a command's own check runs only then, because an error
    /// it adds hides the parser's "missing argument".
    /// </summary>
    internal static bool HasRequiredArguments(CommandResult result) =>
        result.Command.Arguments.All(a => a.Arity.MinimumNumberOfValues == 0 || result.GetResult(a) is { Tokens.Count: > 0 });

    /// <summary>A key given as <c>hex:...</c>, <c>text:...</c> or plain text.</summary>
    internal static KeyArgument? ParseKey(ArgumentResult result)
    {
        var token = result.Tokens.Count > 0 ? result.Tokens[0].Value : "";
        var bytes = Values.Parse(token, out var problem);
        if (bytes is not null) return new KeyArgument(bytes, token);
        result.AddError(problem!);
        return null;
    }

    /// <summary>
    /// A word that looks like an option but that no option took: the parser takes it for an argument (or leaves it
    /// unmatched). After <c>--</c>, words that start with '-' are arguments.
    /// </summary>
    private static string? UnknownOption(ParseResult parse)
    {
        var tokens = parse.Tokens;
        var optionValues = new HashSet<Token>(ReferenceEqualityComparer.Instance);
        CollectOptionValues(parse.RootCommandResult, optionValues);
        foreach (var token in tokens)
        {
            if (token.Type == TokenType.DoubleDash) break;
            if (token.Type == TokenType.Argument && token.Value.Length > 1 && token.Value[0] == '-' && !optionValues.Contains(token)) return token.Value;
        }
        return null;
    }

    private static void CollectOptionValues(SymbolResult result, HashSet<Token> values)
    {
        if (result is not CommandResult command) return;
        foreach (var child in command.Children)
        {
            if (child is OptionResult option)
            {
                foreach (var token in option.Tokens) values.Add(token);
            }
            CollectOptionValues(child, values);
        }
    }

    private static string OneLine(string message) => message.ReplaceLineEndings(" ");

    /// <summary><c>--version</c>: the tool's version, not the host's (under a test runner the entry assembly is the runner).</summary>
    private sealed class VersionAction : SynchronousCommandLineAction
    {
        /// <summary>Like the parser's own: <c>--version</c> alone needs no command (other words with it are still an error).</summary>
        public override bool ClearsParseErrors => true;

        public override int Invoke(ParseResult parseResult)
        {
            parseResult.InvocationConfiguration.Output.WriteLine(Version);
            return Ok;
        }
    }
}

/// <summary>Bad command-line arguments.</summary>
/// <param name="message">What is wrong.</param>
/// <param name="commandName">The command whose usage to show; null for the tool's.</param>
internal sealed class UsageException(string message, string? commandName = null) : Exception(message)
{
    /// <summary>The command whose usage to show; null for the tool's.</summary>
    public string? CommandName { get; } = commandName;
}
