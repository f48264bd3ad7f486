using System.CommandLine;
using System.Globalization;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary>
/// <c>memory [--pid N] [&lt;dir&gt;]</c>: the Rss, Pss, Private_Dirty, Anonymous and Swap figures of a process from
/// /proc/PID/smaps_rollup; without --pid, of this tool after it has opened and checked the environment in &lt;dir&gt;.
/// </summary>
internal static class MemoryCommand
{
    private static readonly string[] s_fields = ["Rss", "Pss", "Private_Dirty", "Anonymous", "Swap"];

    public static Command Create()
    {
        var directory = new Argument<string?>("dir")
        {
            Description = "The environment's directory: this tool opens and checks it, then reports its own memory.",
            Arity = ArgumentArity.ZeroOrOne,
        };
        var pid = new Option<int?>("--pid")
        {
            Description = "The process to report on, instead of this tool.",
            HelpName = "N",
            CustomParser = result => (int?)Cli.ParseNumber(result, "a process id", 1, int.MaxValue),
        };
        var json = Cli.JsonOption();
        var command = new Command("memory", "Rss, Pss, Private_Dirty, Anonymous and Swap from /proc/PID/smaps_rollup (Linux): of a process, or of this tool with the environment open.")
        {
            directory,
            pid,
            json,
        };
        command.Validators.Add(result =>
        {
            var hasDirectory = result.GetValue(directory) is not null;
            var hasPid = result.GetResult(pid) is not null;
            if (hasDirectory == hasPid) result.AddError(hasPid ? "give either <dir> or --pid, not both" : "expected <dir> (or --pid N)");
        });
        command.SetAction(parse => Run(parse.GetValue(directory), parse.GetValue(pid), parse.GetValue(json), parse.InvocationConfiguration.Output));
        return command;
    }

    public static int Run(string? directory, int? processId, bool json, TextWriter output)
    {
        if (!OperatingSystem.IsLinux()) throw new InspectionException("memory needs /proc/PID/smaps_rollup (Linux only)");
        string pid;
        if (processId is { } id)
        {
            pid = id.ToString(CultureInfo.InvariantCulture);
        }
        else
        {
            ArgumentNullException.ThrowIfNull(directory);
            using var snapshot = EnvironmentSnapshot.Open(directory);
            snapshot.Check();
            pid = "self";
        }
        var path = $"/proc/{pid}/smaps_rollup";
        string[] lines;
        try
        {
            lines = File.ReadAllLines(path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw new InspectionException($"cannot read {path}: {e.Message}");
        }
        var figures = new Dictionary<string, long>();
        foreach (var line in lines)
        {
            var colon = line.IndexOf(':', StringComparison.Ordinal);
            if (colon <= 0) continue;
            var name = line[..colon];
            if (!s_fields.Contains(name)) continue;
            var parts = line[(colon + 1)..].Split(' ', StringSplitOptions.RemoveEmptyEntries);
            if (parts.Length >= 1 && long.TryParse(parts[0], NumberStyles.None, CultureInfo.InvariantCulture, out var kb)) figures[name] = kb * 1024;
        }
        var shownId = processId ?? Environment.ProcessId;
        if (json)
        {
            Output.Json(output, new { pid = shownId, bytes = s_fields.ToDictionary(f => f, f => figures.GetValueOrDefault(f)) });
            return Cli.Ok;
        }
        output.WriteLine($"process {shownId}{(pid == "self" ? " (this tool, environment open)" : "")}");
        foreach (var field in s_fields) output.WriteLine($"  {field + ":",-15} {Output.N(figures.GetValueOrDefault(field) / 1024),12} kB");
        return Cli.Ok;
    }
}
