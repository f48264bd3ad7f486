using System.Diagnostics;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W7 group-journals: a root environment and 8 branch environments, 9 threads (one per environment), each
/// 1,000 transactions of 10 random puts, durable. With shared journals off, every environment commits to
/// its own journal (for the other engines: 9 databases); on, the 9 are one <see cref="EnvironmentGroup"/> whose
/// branches' entries go into the root's journal, the entries waiting going out together. The other engines have no
/// such mode. The clock runs from the common start, once every thread has its generators ready, to the close of the
/// last environment. Two unmeasured rounds of each mode, as long as the measured ones, go first.
/// </summary>
internal sealed class GroupJournals : IWorkload
{
    private const int Environments = 9;
    private const int PutsPerTransaction = 10;
    private const string OnKey = "W7/on";
    private const string OffKey = "W7/off";

    public string Id => "W7";

    public string Name => "group-journals";

    public IReadOnlyList<WorkloadRow> Rows { get; } =
    [
        new(OnKey, "W7 group-journals, shared journals on", "tx/s"),
        new(OffKey, "W7 group-journals, shared journals off", "tx/s"),
    ];

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        var perThread = context.Counts.Transactions / 10; // 1,000 (100 with --quick)
        // Unmeasured rounds of each mode first, interleaved and as long as the measured ones: each round lasts well under a
        // second, and until the runtime has compiled the commit paths of both modes fully (tiered compilation) the
        // first measured round of storage's shared mode took 1.5-2x the time and CPU of the third; with tiered
        // compilation off every round took the same. One round a tenth as long, as before, left that bias in.
        var storage = engine as StorageEngine;
        for (var round = 0; round < 2; round++)
        {
            if (storage is not null) Run(engine, context, OnKey, storage, perThread);
            Run(engine, context, OffKey, shared: null, perThread);
        }
        var on = storage is not null
            ? Run(engine, context, OnKey, storage, perThread)
            : RowResult.Note(OnKey, "n/a: no shared journals");
        return [on, Run(engine, context, OffKey, shared: null, perThread)];
    }

    /// <param name="shared">The engine whose environments are opened as one group with shared journals; null: each alone.</param>
    /// <param name="perThread">Transactions each thread commits.</param>
    private RowResult Run(IEngine engine, RunContext context, string rowKey, StorageEngine? shared, int perThread)
    {
        var directories = Enumerable.Range(0, Environments).Select(_ => context.FreshDirectory(engine, Id)).ToArray();
        var instances = new List<IEngineInstance>();
        EnvironmentGroup? environmentGroup = null;
        EnvironmentGroupStats? groupStats = null;
        var before = default(DeviceIo);
        ThreadGroup group;
        try
        {
            if (shared is not null)
            {
                instances.Add(shared.Open(options => (environmentGroup = EnvironmentGroup.Open(directories[0], options)).Root));
                foreach (var directory in directories.Skip(1)) instances.Add(shared.Open(options => environmentGroup!.OpenBranch(directory, options)));
            }
            else
            {
                foreach (var directory in directories) instances.Add(engine.Open(directory));
            }
            group = ThreadGroup.Run(Environments, e => $"W7-{e}", e =>
            {
                var instance = instances[e];
                var keys = new RandomKeySource();
                keys.Skip((long)e * perThread * PutsPerTransaction);
                var values = new ValueSource();
                var batch = new KeyValueBatch(PutsPerTransaction);
                return new ThreadWork(() =>
                {
                    for (var i = 0; i < perThread; i++)
                    {
                        batch.Fill(keys, values, PutsPerTransaction);
                        instance.Commit(batch);
                    }
                });
            }, atStart: () => before = DeviceIo.Snapshot());
        }
        finally
        {
            // Branches first: the root's close ends the group's shared journal.
            groupStats = environmentGroup?.GetStats();
            for (var i = instances.Count - 1; i >= 0; i--) instances[i].Dispose();
            if (environmentGroup is not null && groupStats is { } open) groupStats = environmentGroup.GetStats() with { Members = open.Members };
        }
        var ended = Stopwatch.GetTimestamp();
        var device = DeviceIo.Snapshot().Since(before);
        foreach (var directory in directories) context.Discard(directory);
        var transactions = (long)Environments * perThread;
        // From the common start to the close of the last environment.
        var seconds = Stopwatch.GetElapsedTime(group.Start, ended).TotalSeconds;
        var figures = new List<Figure>
        {
            new("seconds", Format.Seconds(seconds)),
            new("transactions (9 environments)", Format.Count(transactions)),
            new("tx/s", Format.Rate(transactions / seconds)),
        };
        figures.AddRange(device.Figures);
        if (groupStats is { } stats)
        {
            figures.Add(new("durable journal writes (the group's shared journal)", Format.Count(stats.SharedJournalWrites)));
            figures.Add(new("journal bytes written (shared journal)", Format.Bytes(stats.SharedJournalBytes)));
            figures.Add(new("members sharing the journal", $"{stats.Members.Count(m => m.JournalShared)} of {stats.Members.Count}"));
            figures.Add(new("shared journal files made / reused", $"{Format.Count(stats.SharedJournalFilesCreated)} / {Format.Count(stats.SharedJournalFilesReused)}"));
        }
        else if (instances.All(i => i is StorageEngineInstance))
        {
            var writes = instances.Sum(i => ((StorageEngineInstance)i).Stats.Journal.Writes);
            var bytes = instances.Sum(i => ((StorageEngineInstance)i).Stats.Journal.Bytes);
            figures.Add(new("durable journal writes (all 9 journals)", Format.Count(writes)));
            figures.Add(new("journal bytes written (all 9 journals)", Format.Bytes(bytes)));
        }
        // The engine's own figures of the root environment (the others are alike).
        figures.AddRange(instances[0].Counters().Select(figure => figure with { Label = "root: " + figure.Label }));
        return new RowResult(rowKey, transactions / seconds, figures);
    }
}
