using System.Diagnostics;
using System.Globalization;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Memory;

/// <summary>
/// Where a held reader's scratch lives: W1 commits (100 random puts, durable) with one idle reader held across all
/// of them, printing the process's resident memory split into anonymous and file-backed pages next to the
/// environment's scratch, spilled and pinned bytes, and the memory cgroup's figures when the process runs in one.
/// Run it inside a memory cgroup to see whether spilling scratch to the scratch file keeps the process alive and
/// its resident memory under the limit (see docs/readers-and-memory.md, "Spilling scratch to a file"):
///   dotnet run -c Release --project benchmarks/Storage.Benchmarks -- --held-reader-probe [--commits N] [--scratch-budget-mib N] [--no-spill]
/// </summary>
internal static class HeldReaderProbe
{
    public const string Usage = """
        usage: Storage.Benchmarks --held-reader-probe [--commits N] [--scratch-budget-mib N] [--no-spill] [--every N]

          --commits             W1 transactions to commit with the reader held (default 30000)
          --scratch-budget-mib  StorageOptions.ScratchBudgetBytes in MiB (default 256, the default budget)
          --no-spill            StorageOptions.SpillScratchToFile = false: scratch stays anonymous memory
          --every               print a line every N commits (default 2000)
        """;

    public static int Run(IReadOnlyList<string> args, TextWriter output)
    {
        var commits = 30_000;
        var budgetMib = 256;
        var spill = true;
        var every = 2_000;
        for (var i = 0; i < args.Count; i++)
        {
            switch (args[i])
            {
                case "--held-reader-probe":
                    break;
                case "--commits" when i + 1 < args.Count && int.TryParse(args[i + 1], CultureInfo.InvariantCulture, out commits):
                case "--scratch-budget-mib" when i + 1 < args.Count && int.TryParse(args[i + 1], CultureInfo.InvariantCulture, out budgetMib):
                case "--every" when i + 1 < args.Count && int.TryParse(args[i + 1], CultureInfo.InvariantCulture, out every):
                    i++;
                    break;
                case "--no-spill":
                    spill = false;
                    break;
                default:
                    output.WriteLine(Usage);
                    return 2;
            }
        }

        var root = RepositoryPaths.FindRoot();
        var directory = Path.Combine(RepositoryPaths.Scratch(root), $"held-reader-probe-{Environment.ProcessId}");
        if (Directory.Exists(directory)) Directory.Delete(directory, recursive: true);
        var options = StorageOptions.Default with { ScratchBudgetBytes = (long)budgetMib << 20, SpillScratchToFile = spill };
        output.WriteLine($"held-reader probe: {commits:N0} W1 commits with one reader held, scratch budget {budgetMib} MiB, spill {(spill ? "on" : "off")}, cgroup {CgroupMemory.Describe()}");
        output.WriteLine("commits    tx/s  rss_mib anon_mib file_mib  scratch_mib spilled_mib pinned_mib  cgroup_usage_mib cgroup_cache_mib cgroup_dirty_mib");
        ProcessMemory.ResetPeak();
        try
        {
            using var environment = StorageEnvironment.Open(directory, options);
            using (var tx = environment.BeginWrite())
            {
                tx.CreateTree("kv");
                tx.Commit();
            }
            var reader = environment.BeginRead();
            var keys = new RandomKeySource();
            var values = new ValueSource();
            var batch = new KeyValueBatch(100);
            var clock = Stopwatch.StartNew();
            var lastCount = 0;
            var lastTime = TimeSpan.Zero;
            for (var c = 1; c <= commits; c++)
            {
                batch.Fill(keys, values, 100);
                using (var tx = environment.BeginWrite())
                {
                    var tree = tx.OpenTree("kv");
                    for (var i = 0; i < batch.Count; i++) tree.Put(batch.Key(i), batch.Value(i));
                    tx.Commit();
                }
                if (c % every != 0 && c != commits) continue;
                var now = clock.Elapsed;
                var rate = (c - lastCount) / (now - lastTime).TotalSeconds;
                (lastCount, lastTime) = (c, now);
                var stats = environment.GetStats();
                var (anon, file) = StatusRss();
                output.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"{c,7} {rate,7:N0} {Mib(ProcessMemory.RssBytes()),8} {Mib(anon),8} {Mib(file),8} {Mib(stats.Memory.ScratchBytes),12} {Mib(stats.Memory.ScratchSpilledBytes),11} {Mib(stats.Memory.PinnedBytes),10} {Mib(CgroupMemory.UsageBytes()),17} {Mib(CgroupMemory.Stat("total_cache")),16} {Mib(CgroupMemory.Stat("total_dirty")),16}"));
            }
            var held = clock.Elapsed;
            reader.Dispose();
            output.WriteLine($"reader released after {held.TotalSeconds:N1} s ({commits / held.TotalSeconds:N0} tx/s with it held)");
        }
        finally
        {
            if (Directory.Exists(directory)) Directory.Delete(directory, recursive: true);
        }
        output.WriteLine($"peak RSS {Format.Bytes(ProcessMemory.PeakRssBytes())}; cgroup peak usage {Format.Bytes(CgroupMemory.MaxUsageBytes())}, failcnt {CgroupMemory.Read("memory.failcnt") ?? "n/a"}");
        return 0;
    }

    private static string Mib(long? bytes) => bytes is { } b ? (b >> 20).ToString(CultureInfo.InvariantCulture) : "n/a";

    /// <summary>RssAnon and RssFile (plus RssShmem) of /proc/self/status.</summary>
    private static (long? Anon, long? File) StatusRss()
    {
        long? anon = null, file = null;
        foreach (var line in File.ReadLines("/proc/self/status"))
        {
            if (line.StartsWith("RssAnon:", StringComparison.Ordinal)) anon = Kib(line);
            else if (line.StartsWith("RssFile:", StringComparison.Ordinal)) file = (file ?? 0) + Kib(line);
            else if (line.StartsWith("RssShmem:", StringComparison.Ordinal)) file = (file ?? 0) + Kib(line);
        }
        return (anon, file);
    }

    private static long Kib(string line) =>
        long.Parse(line.AsSpan(line.IndexOf(':') + 1).Trim().TrimEnd("kB").Trim(), CultureInfo.InvariantCulture) * 1024;

    /// <summary>The cgroup v1 memory controller's files for this process's group, when there is one.</summary>
    private static class CgroupMemory
    {
        private static readonly string? s_directory = Find();

        public static string Describe() =>
            s_directory is null ? "none" : $"{s_directory} (limit {Format.Bytes(long.TryParse(Read("memory.limit_in_bytes"), CultureInfo.InvariantCulture, out var limit) ? limit : null)})";

        public static long? UsageBytes() => long.TryParse(Read("memory.usage_in_bytes"), CultureInfo.InvariantCulture, out var value) ? value : null;

        public static long? MaxUsageBytes() => long.TryParse(Read("memory.max_usage_in_bytes"), CultureInfo.InvariantCulture, out var value) ? value : null;

        public static long? Stat(string name)
        {
            var text = Read("memory.stat");
            if (text is null) return null;
            foreach (var line in text.Split('\n'))
            {
                var parts = line.Split(' ');
                if (parts.Length == 2 && parts[0] == name && long.TryParse(parts[1], CultureInfo.InvariantCulture, out var value)) return value;
            }
            return null;
        }

        public static string? Read(string file)
        {
            if (s_directory is null) return null;
            try
            {
                return File.ReadAllText(Path.Combine(s_directory, file)).Trim();
            }
            catch (IOException)
            {
                return null;
            }
        }

        private static string? Find()
        {
            try
            {
                foreach (var line in File.ReadLines("/proc/self/cgroup"))
                {
                    // v1: "4:memory:/storage-probe"
                    var parts = line.Split(':', 3);
                    if (parts.Length == 3 && parts[1].Split(',').Contains("memory"))
                    {
                        var directory = "/sys/fs/cgroup/memory" + parts[2];
                        return parts[2] == "/" || !Directory.Exists(directory) ? null : directory;
                    }
                }
            }
            catch (IOException)
            {
            }
            return null;
        }
    }
}
