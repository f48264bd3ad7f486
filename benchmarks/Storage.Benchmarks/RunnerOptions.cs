using System.Globalization;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Workloads;

namespace Storage.Benchmarks;

/// <summary>The workload runner's command line.</summary>
internal sealed record RunnerOptions
{
    public const string Usage = """
        usage: Storage.Benchmarks [--workloads [W1,W1-held-reader,W2,...]] [--engines storage,lmdb,sqlite,rocksdb] [--quick] [--keep] [--timeout-s N]
               Storage.Benchmarks --bdn [BenchmarkDotNet arguments, e.g. --filter '*']

          --workloads   which workloads to run (default: all: W1,W1-held-reader,W2,W3,W4,W5,W6,W7,W8,W9,W10,W11)
          --engines     which engines to compare (default: all)
          --quick       divide transaction and get counts by 10
          --keep        keep the engines' directories under results/tmp
          --timeout-s   give up on one engine's workload after this long (default 1800); its cell says "error: timeout"
          --bdn         run the BenchmarkDotNet micro-benchmarks instead
        """;

    public IReadOnlyList<IWorkload> Workloads { get; init; } = WorkloadCatalog.All;

    public IReadOnlyList<IEngine> Engines { get; init; } = EngineCatalog.All;

    public bool Quick { get; init; }

    public bool KeepDirectories { get; init; }

    public TimeSpan Timeout { get; init; } = TimeSpan.FromSeconds(1800);

    /// <summary>Parses the arguments; null (and the reason in <paramref name="error"/>) when they are wrong.</summary>
    public static RunnerOptions? Parse(IReadOnlyList<string> args, out string? error)
    {
        var options = new RunnerOptions();
        error = null;
        for (var i = 0; i < args.Count; i++)
        {
            switch (args[i])
            {
                case "--quick":
                    options = options with { Quick = true };
                    break;
                case "--keep":
                    options = options with { KeepDirectories = true };
                    break;
                case "--workloads":
                    if (HasValue(args, i))
                    {
                        var workloads = SelectAll(args[++i], WorkloadCatalog.Find, "workload", ref error);
                        if (workloads is null) return null;
                        // Run order stays the catalog's, whatever order they were named in.
                        options = options with { Workloads = WorkloadCatalog.All.Where(workloads.Contains).ToList() };
                    }
                    break;
                case "--engines":
                    if (!HasValue(args, i))
                    {
                        error = "--engines needs a list, e.g. --engines storage,lmdb";
                        return null;
                    }
                    var engines = SelectAll(args[++i], EngineCatalog.Find, "engine", ref error);
                    if (engines is null) return null;
                    options = options with { Engines = EngineCatalog.All.Where(engines.Contains).ToList() };
                    break;
                case "--timeout-s":
                    if (!HasValue(args, i) || !int.TryParse(args[++i], NumberStyles.None, CultureInfo.InvariantCulture, out var seconds) || seconds < 1)
                    {
                        error = "--timeout-s needs a whole number of seconds";
                        return null;
                    }
                    options = options with { Timeout = TimeSpan.FromSeconds(seconds) };
                    break;
                case "--help" or "-h":
                    error = "";
                    return null;
                default:
                    error = $"unknown argument '{args[i]}'";
                    return null;
            }
        }
        return options;
    }

    private static bool HasValue(IReadOnlyList<string> args, int i) =>
        i + 1 < args.Count && !args[i + 1].StartsWith("--", StringComparison.Ordinal);

    private static List<T>? SelectAll<T>(string list, Func<string, T?> find, string kind, ref string? error)
        where T : class
    {
        var selected = new List<T>();
        foreach (var name in list.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries))
        {
            var item = find(name);
            if (item is null)
            {
                error = $"unknown {kind} '{name}'";
                return null;
            }
            selected.Add(item);
        }
        if (selected.Count == 0) error = $"no {kind} selected";
        return selected.Count == 0 ? null : selected;
    }
}
