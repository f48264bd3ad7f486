using System.Buffers.Binary;
using Storage.Inspection;
using Storage.Tests.Support;

namespace Storage.Tests.Damage;

/// <summary>One undamaged environment the campaign copies and damages, with a map of what lies where in its files.</summary>
internal sealed class DamageBase
{
    public required string Name { get; init; }

    public required string Directory { get; init; }

    /// <summary>The last transaction whose commit returned: what an undamaged open must show.</summary>
    public required long LastAcknowledged { get; init; }

    public required StorageOptions Options { get; init; }

    /// <summary>Data-file pages by what they hold in the last committed state (journal applied).</summary>
    public required Dictionary<string, List<long>> PagesByKind { get; init; }

    /// <summary>Journal regions: (label, file, offset, length).</summary>
    public required List<(string Label, string File, long Offset, long Length)> JournalRegions { get; init; }

    /// <summary>The byte range of the entry of <see cref="LastAcknowledged"/>, when it is still in the journal.</summary>
    public (string File, long Offset, long Length)? LastEntry { get; init; }
}

/// <summary>
/// The environments the damage campaign starts from, built once: cleanly closed; killed with its last transactions
/// only in the journal; killed after the flusher wrote pages past the last sync (the data file ahead of its header).
/// </summary>
public sealed class DamageBases : IDisposable
{
    private readonly TempDirectory _root = new("damage-bases");

    public DamageBases()
    {
        var small = TestOptions.Small;
        Bases =
        [
            Build("closed", small, 120, crash: false),
            Build("journal-tail", TestOptions.JournalOnly, 150, crash: true, checkpointAt: 90),
            Build("flushed-ahead", small with { FlushInterval = TimeSpan.FromMilliseconds(600_000), SyncInterval = TimeSpan.FromMilliseconds(600_000), ScratchBudgetBytes = 1 << 20, MinJournalFileSizeBytes = 8 << 20, MaxJournalFileSizeBytes = 8 << 20 },
                170, crash: true, checkpointAt: 60),
        ];
    }

    internal IReadOnlyList<DamageBase> Bases { get; }

    private DamageBase Build(string name, StorageOptions options, int transactions, bool crash, int checkpointAt = -1)
    {
        var directory = _root.Combine(name);
        var env = StorageEnvironment.Open(directory, options);
        for (var t = 1; t <= transactions; t++)
        {
            DamageWorkload.Commit(env, t);
            if (t == checkpointAt) env.Checkpoint();
        }
        if (crash) env.SimulateCrash();
        else env.Dispose();
        return Describe(name, directory, transactions, options);
    }

    private static DamageBase Describe(string name, string directory, long lastAcknowledged, StorageOptions options)
    {
        var report = EnvironmentSnapshot.Check(directory, collectPages: true);
        Assert.True(report.IsConsistent, $"base {name}: {string.Join("; ", report.Problems.Select(p => p.Message))}");
        var byKind = new Dictionary<string, List<long>>();
        for (long page = 0; page < report.Pages!.Length; page++)
        {
            var kind = report.Pages[page].Kind.ToString();
            if (!byKind.TryGetValue(kind, out var list)) byKind[kind] = list = [];
            list.Add(page);
        }
        var regions = new List<(string, string, long, long)>();
        (string, long, long)? lastEntry = null;
        foreach (var (_, path) in JournalInspector.Files(directory))
        {
            regions.Add(("journal-file-header", path, 0, 64));
            var bytes = File.ReadAllBytes(path);
            for (var offset = 4096; offset + 64 <= bytes.Length; offset += 4096)
            {
                if (BinaryPrimitives.ReadUInt64LittleEndian(bytes.AsSpan(offset)) == 0x444E454A_47524F54) regions.Add(("journal-end-marker", path, offset, 64));
            }
        }
        foreach (var entry in JournalInspector.Entries(directory))
        {
            regions.Add(("journal-entry-header", entry.Path, entry.OffsetBytes, 128));
            if (entry.PayloadBytes > 0) regions.Add(("journal-entry-payload", entry.Path, entry.OffsetBytes + 128, entry.PayloadBytes));
            if (entry.TransactionId == lastAcknowledged) lastEntry = (entry.Path, entry.OffsetBytes, entry.SizeBytes);
        }
        return new DamageBase
        {
            Name = name,
            Directory = directory,
            LastAcknowledged = lastAcknowledged,
            Options = options,
            PagesByKind = byKind,
            JournalRegions = regions,
            LastEntry = lastEntry,
        };
    }

    public void Dispose() => _root.Dispose();
}
