using Storage.Benchmarks.Engines;

namespace Storage.Benchmarks.Workloads;

/// <summary>What the workloads of one run share: counts, where fresh directories go, and W1's directories for W3.</summary>
internal sealed class RunContext
{
    private readonly Dictionary<string, string> _filledDirectories = [];
    private readonly HashSet<string> _failedFills = [];
    private readonly Dictionary<(string Engine, string Workload), double> _rates = [];
    private readonly Lock _lock = new();
    private readonly List<(string Title, string Markdown)> _sections = [];
    private int _directories;

    /// <summary>Extra report sections (W8's flush table), in the order they were added.</summary>
    public IReadOnlyList<(string Title, string Markdown)> Sections
    {
        get
        {
            lock (_lock) return [.. _sections];
        }
    }

    public void AddSection(string title, string markdown)
    {
        lock (_lock) _sections.Add((title, markdown));
    }

    private readonly List<(string Name, Func<ScottPlot.Plot> Draw)> _charts = [];

    /// <summary>Extra charts (W8's runs per flush), each saved beside the report as <c>{report}-{name}.svg</c>.</summary>
    public IReadOnlyList<(string Name, Func<ScottPlot.Plot> Draw)> Charts
    {
        get
        {
            lock (_lock) return [.. _charts];
        }
    }

    /// <summary>Adds a chart; returns the file name the report's markdown can link to.</summary>
    public string AddChart(string name, Func<ScottPlot.Plot> draw)
    {
        lock (_lock) _charts.Add((name, draw));
        return $"{ReportName}-{name}.svg";
    }

    /// <summary>The report's file name without its extension ("latest" or "latest-partial"), set by the runner.</summary>
    public string ReportName { get; init; } = "latest-partial";

    public RunContext(WorkloadCounts counts, string runDirectory, bool keepDirectories, TextWriter progress)
    {
        Counts = counts;
        RunDirectory = runDirectory;
        KeepDirectories = keepDirectories;
        Progress = progress;
    }

    public WorkloadCounts Counts { get; }

    /// <summary>Everything this run writes lives under here (on the working tree's disk).</summary>
    public string RunDirectory { get; }

    public bool KeepDirectories { get; }

    public TextWriter Progress { get; }

    /// <summary>A new, empty directory for one engine and workload.</summary>
    public string FreshDirectory(IEngine engine, string workloadId)
    {
        int number;
        lock (_lock) number = ++_directories;
        var directory = Path.Combine(RunDirectory, $"{number:D2}-{workloadId}-{engine.Name}");
        if (Directory.Exists(directory)) Directory.Delete(directory, recursive: true);
        Directory.CreateDirectory(directory);
        return directory;
    }

    /// <summary>Removes a directory the run no longer needs (kept with <c>--keep</c>).</summary>
    public void Discard(string directory)
    {
        if (KeepDirectories || !Directory.Exists(directory)) return;
        Directory.Delete(directory, recursive: true);
    }

    /// <summary>W1 finished for <paramref name="engine"/>: its directory holds the keys W3 reads.</summary>
    public void RecordFilled(IEngine engine, string directory)
    {
        lock (_lock) _filledDirectories[engine.Name] = directory;
    }

    public void RecordFillFailed(IEngine engine)
    {
        lock (_lock) _failedFills.Add(engine.Name);
    }

    /// <summary>A workload's throughput for <paramref name="engine"/>, for rows that compare themselves with it.</summary>
    public void RecordRate(IEngine engine, string workloadId, double rate)
    {
        lock (_lock) _rates[(engine.Name, workloadId)] = rate;
    }

    /// <summary>The throughput <see cref="RecordRate"/> recorded in this run, or null.</summary>
    public double? Rate(IEngine engine, string workloadId)
    {
        lock (_lock) return _rates.TryGetValue((engine.Name, workloadId), out var rate) ? rate : null;
    }

    public string? FilledDirectory(IEngine engine)
    {
        lock (_lock) return _filledDirectories.GetValueOrDefault(engine.Name);
    }

    public bool FillFailed(IEngine engine)
    {
        lock (_lock) return _failedFills.Contains(engine.Name);
    }
}
