using System.Diagnostics;
using System.Globalization;
using System.Runtime.InteropServices;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;
using Storage.Benchmarks.Workloads;

namespace Storage.Benchmarks;

/// <summary>
/// Runs the selected workloads against the selected engines, workload by workload (each engine in
/// turn, so machine noise spreads over all of them), and prints and saves the comparison.
/// One engine failing or hanging does not stop the others: its cells say why.
/// </summary>
internal sealed class WorkloadRunner
{
    private readonly RunnerOptions _options;
    private readonly TextWriter _output;
    private readonly HashSet<string> _hungEngines = [];

    public WorkloadRunner(RunnerOptions options, TextWriter output)
    {
        _options = options;
        _output = output;
    }

    /// <summary>0 when every available engine ran every workload; 1 when any failed; 2 when the run could not start.</summary>
    public int Run()
    {
        var root = RepositoryPaths.FindRoot();
        var scratch = RepositoryPaths.Scratch(root);
        Directory.CreateDirectory(scratch);
        var mount = MountInfo.Find(scratch);
        if (mount?.IsInMemory == true)
        {
            _output.WriteLine($"{scratch} is on {mount.Value.FileSystemType}: durable workloads must run on a disk. Stopping.");
            return 2;
        }
        var runDirectory = Path.Combine(scratch, "run-" + DateTime.UtcNow.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture));
        Directory.CreateDirectory(runDirectory);

        var counts = _options.Quick ? WorkloadCounts.Quick : WorkloadCounts.Full;
        // Only a full comparison (every workload, every engine, full counts) replaces the one the README quotes.
        var complete = !_options.Quick && _options.Workloads.Count == WorkloadCatalog.All.Count && _options.Engines.Count == EngineCatalog.All.Count;
        var context = new RunContext(counts, runDirectory, _options.KeepDirectories, _output) { ReportName = complete ? "latest" : "latest-partial" };
        var rows = _options.Workloads.SelectMany(workload => workload.Rows).ToList();
        var table = new ResultTable(rows, _options.Engines.Select(engine => engine.Name).ToList());

        var available = new List<IEngine>();
        var unavailable = new List<string>();
        foreach (var engine in _options.Engines)
        {
            var reason = engine.UnavailableReason;
            if (reason is null)
            {
                available.Add(engine);
                continue;
            }
            foreach (var row in rows) table.SetText(engine.Name, row.Key, "not available");
            unavailable.Add($"{engine.Name}: {reason}");
            _output.WriteLine($"{engine.Name}: {reason}");
        }

        _output.WriteLine($"Running {string.Join(", ", _options.Workloads.Select(w => w.Id))} on {string.Join(", ", available.Select(e => e.Name))} in {runDirectory}{(_options.Quick ? " (quick)" : "")}");
        foreach (var engine in available) WarmUpEngine(engine, context, table);
        foreach (var workload in _options.Workloads)
        {
            foreach (var engine in available) RunOne(workload, engine, context, table);
        }

        if (!_options.KeepDirectories && _hungEngines.Count == 0) TryDelete(runDirectory);

        var report = MarkdownReport.Render(table, Preamble(root, scratch, mount, counts), Notes(counts, unavailable, _options.Engines.Any(engine => engine is RocksDbEngine)), context.Sections);
        _output.WriteLine();
        _output.Write(report);
        var latest = Path.Combine(RepositoryPaths.Results(root), context.ReportName + ".md");
        File.WriteAllText(latest, report);
        _output.WriteLine($"Written to {Path.GetRelativePath(root, latest)}");
        Chart.Write(table, root, Path.ChangeExtension(latest, null), "Workload comparison (higher is better)",
            $"{DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC, {(_options.Quick ? "quick counts" : "full counts")}, {Environment.ProcessorCount} cores, {RuntimeInformation.OSDescription}", _output);
        foreach (var (name, draw) in context.Charts) Chart.WriteExtra(draw, Path.Combine(RepositoryPaths.Results(root), $"{context.ReportName}-{name}.svg"), root, _output);
        return table.HasErrors ? 1 : 0;
    }

    /// <summary>Whether some engine thread was abandoned while still running (the process must then exit explicitly).</summary>
    public bool LeftThreadsRunning => _hungEngines.Count > 0;

    private void WarmUpEngine(IEngine engine, RunContext context, ResultTable table)
    {
        _output.WriteLine($"[warm-up {engine.Name}] running");
        var (finished, failure) = RunOnThread($"warmup-{engine.Name}", () => WarmUp.Run(engine, context));
        if (!finished)
        {
            Abandon(engine, "warm-up", table, table.Rows);
        }
        else if (failure is not null)
        {
            // Not recorded as a result: the workloads that follow hit the same failure and report it.
            _output.WriteLine($"[warm-up {engine.Name}] failed: {failure.GetType().Name}: {failure.Message}");
        }
    }

    private void RunOne(IWorkload workload, IEngine engine, RunContext context, ResultTable table)
    {
        if (_hungEngines.Contains(engine.Name))
        {
            foreach (var row in workload.Rows.Where(row => !table.Has(row.Key, engine.Name)))
            {
                table.SetText(engine.Name, row.Key, "skipped: an earlier step hung");
            }
            return;
        }
        _output.WriteLine($"[{workload.Id} {engine.Name}] running");
        IReadOnlyList<RowResult>? results = null;
        var clock = Stopwatch.StartNew();
        var (finished, failure) = RunOnThread($"{workload.Id}-{engine.Name}", () => results = workload.Run(engine, context));
        if (!finished)
        {
            Abandon(engine, workload.Id, table, workload.Rows);
            return;
        }
        switch (failure)
        {
            case null:
                foreach (var result in results!)
                {
                    table.Set(engine.Name, result);
                    var row = workload.Rows.First(row => row.Key == result.RowKey);
                    _output.WriteLine(result.Text is null
                        ? $"[{workload.Id} {engine.Name}] {row.Label}: {Format.Rate(result.Throughput)} {row.Unit}"
                        : $"[{workload.Id} {engine.Name}] {row.Label}: {result.Text}");
                }
                break;
            case WorkloadSkippedException skipped:
                foreach (var row in workload.Rows) table.SetText(engine.Name, row.Key, $"skipped: {skipped.Message}");
                _output.WriteLine($"[{workload.Id} {engine.Name}] skipped: {skipped.Message}");
                break;
            default:
                foreach (var row in workload.Rows) table.SetText(engine.Name, row.Key, $"error: {failure.GetType().Name}");
                table.AddError(engine.Name, workload.Id, failure.ToString());
                _output.WriteLine($"[{workload.Id} {engine.Name}] failed after {clock.Elapsed.TotalSeconds:N1} s:");
                _output.WriteLine(failure.ToString());
                break;
        }
    }

    /// <summary>
    /// Runs <paramref name="action"/> on a thread of its own and waits up to the timeout, so that an engine
    /// that hangs can be left behind while the run goes on. Finished is false when it is still running.
    /// </summary>
    private (bool Finished, Exception? Failure) RunOnThread(string name, Action action)
    {
        Exception? failure = null;
        var thread = new Thread(() =>
        {
            try
            {
                action();
            }
            catch (Exception e)
            {
                failure = e;
            }
        })
        {
            IsBackground = true,
            Name = name,
        };
        thread.Start();
        return thread.Join(_options.Timeout) ? (true, failure) : (false, null);
    }

    private void Abandon(IEngine engine, string step, ResultTable table, IEnumerable<WorkloadRow> rows)
    {
        _hungEngines.Add(engine.Name);
        foreach (var row in rows) table.SetText(engine.Name, row.Key, "error: timeout");
        var message = $"Still running after {_options.Timeout.TotalSeconds:N0} s; abandoned (its thread runs on until the process exits).";
        table.AddError(engine.Name, step, message);
        _output.WriteLine($"[{step} {engine.Name}] {message}");
    }

    private static List<string> Preamble(string root, string scratch, MountInfo.Mount? mount, WorkloadCounts counts)
    {
        var fileSystem = mount is { } m ? $"{m.FileSystemType} on {m.Source}" : "unknown file system";
        var memoryBytes = GC.GetGCMemoryInfo().TotalAvailableMemoryBytes;
        return
        [
            $"- run: {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC, {(counts == WorkloadCounts.Quick ? "quick (counts / 10)" : "full counts")}, commit {GitDescription(root)}",
            $"- machine: {Environment.ProcessorCount} cores, {Format.Bytes(memoryBytes)} memory, {RuntimeInformation.OSDescription}, {RuntimeInformation.FrameworkDescription}",
            $"- engines' directories: {Path.GetRelativePath(root, scratch)} ({fileSystem})",
        ];
    }

    private const string RocksDbNote =
        "RocksDB's \"data file size\" is the total of its SST files (closing flushes the memtable into them); its WAL, MANIFEST and LOG files count in the directory size.";

    private static List<string> Notes(WorkloadCounts counts, List<string> unavailable, bool withRocksDb) =>
    [
        $"Counts: W1 and W2 {Format.Count(counts.Transactions)} transactions x {counts.PutsPerTransaction} puts (16-byte keys, 100-byte values), every commit durable; " +
        $"W1-held-reader is W1 with one idle read transaction begun before the fill and ended after {Format.Count(counts.Transactions / 5 * 4)} commits (its details give the ratio to W1 and the process's peak RSS); " +
        "W1-lazy is W1 with commits acknowledged before they are durable (storage's lazy commits, LMDB MDB_NOSYNC, RocksDB sync=false, SQLite synchronous=NORMAL) and one sync at the close; " +
        $"W3 {Format.Count(counts.GetsPerThread)} gets per thread of keys W1 wrote; W4 one scan of them; " +
        $"W5 {Format.Count(counts.Transactions / 10)} transactions x {counts.PutsPerTransaction * 10} puts; " +
        $"W6 16 threads x {Format.Count(counts.Transactions / 5)} transactions of 1 put (W6-async: 16 asynchronous committers instead of threads; W6-merged: each put submitted to the merging write API); " +
        $"W7 9 environments x {Format.Count(counts.Transactions / 10)} transactions of 10 puts, one thread each; " +
        $"W8 is W1 again, on storage, with every flush logged; W9 {Format.Count(counts.Transactions)} gets, one by one and then batched, each pass after the engine's files are dropped from the page cache (an unmeasured cold pass goes first); " +
        $"W9-large the same passes over {Format.Count(ColdMultigetLarge.Entries(counts))} keys (filled in transactions of 10,000 puts, not measured) with the process in a memory cgroup of {Format.Bytes(ColdMultigetLarge.LimitBytes(counts))}, so the file does not fit the page cache; " +
        $"W10 on one open engine: W1's fill, a random half of its keys deleted in transactions of 100, {Format.Count(counts.Transactions)} more W1 transactions, then every key deleted in transactions of 1,000 and the engine compacted where it can (storage's Compact, RocksDB's CompactRange, SQLite's VACUUM; LMDB has none); its cell is puts and deletes per second over the four phases; " +
        $"W11 on one open engine: W1's fill, then one writer thread runs {Format.Count(HotBackup.WriterTransactions(counts))} more W1 transactions, the first half alone and the rest from the start of the engine's own full hot backup " +
        "(storage's BackupAsync, LMDB's environment copy, SQLite's online backup, RocksDB's backup engine), then the backup is restored into a new directory and verified; " +
        "its cells are the writer's tx/s during the backup (its details: without it, the first half, and the ratio), the backup's MB/s (its details: a plain copy of as many bytes on the same disk, and the ratio) and the restore's MB/s.",
        .. unavailable.Select(line => $"Not available: {line}."),
        "Cells say \"not implemented\" where a workload needs a feature this engine does not have yet, and \"n/a\" where another engine has no such feature.",
        .. (withRocksDb ? [RocksDbNote] : Array.Empty<string>()),
        "Throughput is higher-is-better; a ratio above 1.00x means storage is faster. Write workloads include " +
        "closing the engine (final flush and sync); the clock starts once the engine is open with its tree or table created. " +
        "Each engine first runs an unmeasured warm-up: a small fill, then gets, scans and (where the engine has them) batched gets repeated for 0.75 s, so that the JIT has optimised the read paths. Gets copy the value out, for every engine. " +
        "Only ratios from the same run mean much: the machine is shared.",
    ];

    private static string GitDescription(string root)
    {
        try
        {
            using var git = Process.Start(new ProcessStartInfo("git", ["-C", root, "describe", "--always", "--dirty"])
            {
                RedirectStandardOutput = true,
                RedirectStandardError = true,
            });
            if (git is null) return "unknown";
            var description = git.StandardOutput.ReadToEnd().Trim();
            return git.WaitForExit(5000) && git.ExitCode == 0 && description.Length > 0 ? description : "unknown";
        }
        catch (System.ComponentModel.Win32Exception)
        {
            return "unknown (no git)";
        }
    }

    private void TryDelete(string directory)
    {
        try
        {
            Directory.Delete(directory, recursive: true);
        }
        catch (IOException e)
        {
            _output.WriteLine($"Could not remove {directory}: {e.Message}");
        }
        catch (UnauthorizedAccessException e)
        {
            _output.WriteLine($"Could not remove {directory}: {e.Message}");
        }
    }
}
