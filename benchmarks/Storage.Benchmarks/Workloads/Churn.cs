using System.Diagnostics;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W10 churn: W1's fill; a random half of its keys deleted in transactions of 100 deletes; as many W1 transactions again
/// (new random keys, the generator continued); then every key deleted (transactions of 1,000 deletes) and the engine
/// compacted where it can, all on one open engine, every commit durable. Per phase: seconds, the data file's size and the
/// directory's blocks on disk (<c>du</c>), the live bytes (keys + values), and for storage the flush runs.
/// The table compares operations (puts and deletes) per second over the four phases, compaction included.
/// </summary>
internal sealed class Churn : IWorkload
{
    private const int DeletesPerTransaction = 100;
    private const int DeleteAllPerTransaction = 1_000;
    private const int ShuffleSeed = 10;
    private const int LiveEntryBytes = KeyFormat.KeySizeBytes + ValueSource.ValueSizeBytes;

    public string Id => "W10";

    public string Name => "churn";

    public IReadOnlyList<WorkloadRow> Rows { get; } = [new("W10", "W10 churn (fill, delete half, refill, delete all, compact)", "ops/s")];

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        var directory = context.FreshDirectory(engine, Id);
        var counts = context.Counts;
        _peakDataFileBlocks = 0;
        var keys = new RecordingKeySource(counts.FilledKeys * 2);
        var values = new ValueSource();
        var batch = new KeyValueBatch(Math.Max(counts.PutsPerTransaction, DeleteAllPerTransaction));
        var figures = new List<Figure>();
        var phases = new List<(string Name, double Seconds, long Operations)>();
        var instance = engine.Open(directory);
        var flushRunsBefore = 0L;
        long live = 0, peakDu = 0, operations = 0;
        string? compaction = null;
        var clock = new Stopwatch();
        try
        {
            void Phase(string name, Func<long> body)
            {
                clock.Restart();
                var done = body();
                clock.Stop();
                operations += done;
                phases.Add((name, clock.Elapsed.TotalSeconds, done));
                var du = Disk.AllocatedBytes(directory);
                peakDu = Math.Max(peakDu, du ?? 0);
                var runs = FlushRuns(instance);
                figures.Add(new($"{name}: seconds", Format.Seconds(clock.Elapsed.TotalSeconds)));
                figures.Add(new($"{name}: data file / du of the directory", $"{Format.Bytes(engine.DataFileBytes(directory))} / {Format.Bytes(du)}"));
                if (DataFileBlocks(engine, directory) is { } blocks) figures.Add(new($"{name}: du of the data file", Format.Bytes(blocks)));
                figures.Add(new($"{name}: live bytes (keys + values)", Format.Bytes(live)));
                if (engine.DataFileBytes(directory) is { } file && live > 0) figures.Add(new($"{name}: data file / live bytes", Format.Ratio((double)file / live)));
                if (runs is { } r)
                {
                    figures.Add(new($"{name}: flush runs", Format.Count(r - flushRunsBefore)));
                    flushRunsBefore = r;
                }
            }

            Phase("fill", () =>
            {
                for (var tx = 0; tx < counts.Transactions; tx++)
                {
                    batch.Fill(keys, values, counts.PutsPerTransaction);
                    instance.Commit(batch);
                }
                live = keys.Count * LiveEntryBytes;
                return keys.Count;
            });

            var filled = keys.Count;
            var order = Enumerable.Range(0, (int)filled).ToArray();
            new Random(ShuffleSeed).Shuffle(order);
            var deleted = new bool[filled];
            Phase("delete half", () =>
            {
                var half = (int)(filled / 2);
                Span<ulong> chunk = stackalloc ulong[DeletesPerTransaction];
                for (var start = 0; start < half; start += DeletesPerTransaction)
                {
                    var n = Math.Min(DeletesPerTransaction, half - start);
                    for (var i = 0; i < n; i++)
                    {
                        chunk[i] = keys[order[start + i]];
                        deleted[order[start + i]] = true;
                    }
                    batch.SetKeys(chunk[..n]);
                    instance.CommitDeletes(batch);
                }
                live -= (long)half * LiveEntryBytes;
                return half;
            });

            Phase("refill", () =>
            {
                for (var tx = 0; tx < counts.Transactions; tx++)
                {
                    batch.Fill(keys, values, counts.PutsPerTransaction);
                    instance.Commit(batch);
                }
                live += (keys.Count - filled) * LiveEntryBytes;
                return keys.Count - filled;
            });

            Phase("delete all, compact", () =>
            {
                var chunk = new ulong[DeleteAllPerTransaction];
                var n = 0;
                long done = 0;
                for (var i = 0; i < keys.Count; i++)
                {
                    if (i < filled && deleted[i]) continue;
                    chunk[n++] = keys[i];
                    if (n < chunk.Length && i + 1 < keys.Count) continue;
                    batch.SetKeys(chunk.AsSpan(0, n));
                    instance.CommitDeletes(batch);
                    done += n;
                    n = 0;
                }
                if (n > 0)
                {
                    batch.SetKeys(chunk.AsSpan(0, n));
                    instance.CommitDeletes(batch);
                    done += n;
                }
                live = 0;
                compaction = instance.Compact();
                return done;
            });
        }
        catch
        {
            try
            {
                instance.Dispose();
            }
            catch (Exception)
            {
                // The workload's exception is the one to report.
            }
            throw;
        }
        clock.Restart();
        instance.Dispose();
        clock.Stop();
        var closedDu = Disk.AllocatedBytes(directory);
        var closedFile = engine.DataFileBytes(directory);
        var closedBlocks = DataFileBlocks(engine, directory);
        context.Discard(directory);

        var seconds = phases.Sum(p => p.Seconds) + clock.Elapsed.TotalSeconds;
        var rate = operations / seconds;
        var summary = new List<Figure>
        {
            new("seconds", Format.Seconds(seconds)),
            new("operations (puts + deletes)", Format.Count(operations)),
            new("compaction", compaction ?? "online, after deleting everything"),
            new("closed: data file / du of the directory", $"{Format.Bytes(closedFile)} / {Format.Bytes(closedDu)}"),
            new("du after deleting everything and compacting / peak du", closedDu is { } d && peakDu > 0 ? Format.Ratio((double)d / peakDu) : "n/a"),
        };
        if (closedBlocks is { } b) summary.Add(new("closed: du of the data file / its peak", $"{Format.Bytes(b)} / {Format.Bytes(_peakDataFileBlocks)}"));
        return [new RowResult(Id, rate, [.. summary, .. figures])];
    }

    private long _peakDataFileBlocks;

    /// <summary>The data file's blocks on disk, for storage (its one data file); null for the others.</summary>
    private long? DataFileBlocks(IEngine engine, string directory)
    {
        if (engine is not StorageEngine) return null;
        var blocks = Disk.AllocatedBytes(Path.Combine(directory, "data.storage"));
        if (blocks is { } b) _peakDataFileBlocks = Math.Max(_peakDataFileBlocks, b);
        return blocks;
    }

    /// <summary>Flush runs since open, for the engines that say (storage).</summary>
    private static long? FlushRuns(IEngineInstance instance) =>
        instance is StorageEngineInstance storage ? storage.FlushLog.Sum(flush => (long)flush.Runs) : null;

    /// <summary>W1's random keys, remembered as the numbers they are written from.</summary>
    private sealed class RecordingKeySource(long capacity) : IKeySource
    {
        private readonly ulong[] _numbers = new ulong[capacity];
        private Xorshift64 _generator = new(RandomKeySource.Seed);

        public long Count { get; private set; }

        public ulong this[long index] => _numbers[index];

        public void Next(Span<byte> key)
        {
            var number = _generator.Next();
            _numbers[Count++] = number;
            KeyFormat.Write(number, key);
        }
    }
}

/// <summary>Blocks on disk, as du counts them (Linux); null where it cannot be measured.</summary>
internal static class Disk
{
    public static long? AllocatedBytes(string path)
    {
        if (!OperatingSystem.IsLinux() || !Path.Exists(path)) return null;
        try
        {
            using var process = Process.Start(new ProcessStartInfo("du", ["-sB1", path])
            {
                RedirectStandardOutput = true,
                RedirectStandardError = true,
            })!;
            var output = process.StandardOutput.ReadToEnd();
            process.WaitForExit();
            return process.ExitCode == 0 ? long.Parse(output.Split('\t')[0], System.Globalization.CultureInfo.InvariantCulture) : null;
        }
        catch (System.ComponentModel.Win32Exception)
        {
            return null;
        }
    }
}
