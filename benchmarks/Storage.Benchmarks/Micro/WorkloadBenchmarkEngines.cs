using System.Globalization;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;

namespace Storage.Benchmarks.Micro;

/// <summary>
/// What the BenchmarkDotNet versions of the workloads share: the engines to list as parameters (only those that
/// can run here, so an unavailable one is absent rather than a failed case), fresh directories on the working
/// tree's disk, and the unmeasured fill that W3 and W9 read.
/// </summary>
internal static class WorkloadBenchmarkEngines
{
    /// <summary>Environment variable overriding <see cref="DefaultFilledKeys"/>.</summary>
    public const string FilledKeysVariable = "STORAGE_BDN_FILLED_KEYS";

    /// <summary>
    /// Half of W1's full count (1,000,000, the keys the runner's W3 and W9 read), so that a short job's set-up
    /// stays short: on a shared 2-core machine (ext4 on a virtual disk), filling 1,000,000 keys took SQLite about 50 s per
    /// case (LMDB 16 s, Storage 9 s) and 500,000 keys took it 20 s. Set <see cref="FilledKeysVariable"/> to
    /// 1000000 to read W1's whole key set (or 100000 for <c>--quick</c>'s).
    /// </summary>
    public const int DefaultFilledKeys = 500_000;

    /// <summary>
    /// Puts per transaction of the unmeasured fill: large, so the fill costs few syncs. The keys are W1's; only
    /// how they are grouped into commits differs.
    /// </summary>
    private const int FillPutsPerTransaction = 10_000;

    /// <summary>The engines of the catalog that can run here, in column order.</summary>
    public static IEnumerable<string> Available() =>
        EngineCatalog.All.Where(engine => engine.UnavailableReason is null).Select(engine => engine.Name);

    /// <summary>
    /// The available engines whose reader has the batched read API, found by opening each once on an empty
    /// directory; an engine that fails to open is left out here and reports its failure in the one-by-one case.
    /// </summary>
    public static IEnumerable<string> WithBatchedReader() =>
        EngineCatalog.All.Where(engine => engine.UnavailableReason is null && ReaderIsBatched(engine)).Select(engine => engine.Name);

    /// <summary>The keys W3 and W9 fill: <see cref="FilledKeysVariable"/> when set, else <see cref="DefaultFilledKeys"/>.</summary>
    public static IEnumerable<int> FilledKeyCounts()
    {
        var text = Environment.GetEnvironmentVariable(FilledKeysVariable);
        if (string.IsNullOrWhiteSpace(text)) return [DefaultFilledKeys];
        if (!int.TryParse(text, NumberStyles.Integer, CultureInfo.InvariantCulture, out var keys) || keys <= 0)
        {
            throw new ArgumentException($"{FilledKeysVariable} must be a positive whole number of keys, not '{text}'.");
        }
        return [keys];
    }

    /// <summary>The engine named by a case's parameter, or a clear refusal when it is unknown or cannot run here.</summary>
    public static IEngine FindAvailable(string name)
    {
        var engine = EngineCatalog.Find(name) ?? throw new ArgumentException($"No engine named '{name}'.", nameof(name));
        if (engine.UnavailableReason is { } reason) throw new InvalidOperationException($"Engine '{name}' cannot run here: {reason}");
        return engine;
    }

    /// <summary>A new, empty directory under results/tmp for one case; refuses tmpfs, as durable writes need a disk.</summary>
    public static string FreshDirectory(string label, IEngine engine)
    {
        var scratch = RepositoryPaths.Scratch(RepositoryPaths.FindRoot());
        Directory.CreateDirectory(scratch);
        if (MountInfo.Find(scratch)?.IsInMemory == true)
        {
            throw new InvalidOperationException($"{scratch} is in memory (tmpfs): durable workloads must run on a disk.");
        }
        var directory = Path.Combine(scratch, $"bdn-{label}-{engine.Name}-{Environment.ProcessId}");
        Delete(directory);
        Directory.CreateDirectory(directory);
        return directory;
    }

    public static void Delete(string? directory)
    {
        if (directory is not null && Directory.Exists(directory)) Directory.Delete(directory, recursive: true);
    }

    /// <summary>
    /// Writes the first <paramref name="keys"/> keys of W1's random sequence, with W1's values, in large durable
    /// transactions, then closes the engine (all flushing and syncing done), as W3 and W9 find W1's directory.
    /// </summary>
    public static void Fill(IEngine engine, string directory, int keys)
    {
        var keySource = new RandomKeySource();
        var values = new ValueSource();
        var batch = new KeyValueBatch(Math.Min(FillPutsPerTransaction, keys));
        using var instance = engine.Open(directory);
        for (var written = 0; written < keys; written += batch.Count)
        {
            batch.Fill(keySource, values, Math.Min(batch.Capacity, keys - written));
            instance.Commit(batch);
        }
    }

    private static bool ReaderIsBatched(IEngine engine)
    {
        string? directory = null;
        try
        {
            directory = FreshDirectory("probe", engine);
            using var instance = engine.Open(directory);
            using var reader = instance.BeginRead();
            return reader is IBatchedEngineReader;
        }
        catch (Exception)
        {
            // Parameter sources run while BenchmarkDotNet lists every class: a throw here would stop unrelated runs.
            return false;
        }
        finally
        {
            Delete(directory);
        }
    }
}
