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

    public static int Run(ParsedArgs args, TextWriter output, TextWriter error)
    {
        if (!OperatingSystem.IsLinux()) throw new InspectionException("memory needs /proc/PID/smaps_rollup (Linux only)");
        string pid;
        if (args.Option("--pid") is { } given)
        {
            if (!int.TryParse(given, NumberStyles.None, CultureInfo.InvariantCulture, out var id) || id <= 0) throw new UsageException($"'{given}' is not a process id");
            args.Expect(0, "no directory with --pid");
            pid = id.ToString(CultureInfo.InvariantCulture);
        }
        else
        {
            var directory = args.Expect(1, "<dir> (or --pid N)")[0];
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
        var processId = pid == "self" ? Environment.ProcessId : int.Parse(pid, CultureInfo.InvariantCulture);
        if (args.Json)
        {
            Output.Json(output, new { pid = processId, bytes = s_fields.ToDictionary(f => f, f => figures.GetValueOrDefault(f)) });
            return Cli.Ok;
        }
        output.WriteLine($"process {processId}{(pid == "self" ? " (this tool, environment open)" : "")}");
        foreach (var field in s_fields) output.WriteLine($"  {field + ":",-15} {Output.N(figures.GetValueOrDefault(field) / 1024),12} kB");
        return Cli.Ok;
    }
}
