using BenchmarkDotNet.Attributes;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Micro;

/// <summary>
/// One W1-sized write transaction (100 puts of new random keys with 100-byte values) and its durable commit, with
/// the disk left out: the environment lives in memory-backed <c>/dev/shm</c> where there is one (else under
/// results/tmp, and the figure then includes the disk). Inserting new keys, what it allocates includes the page table and
/// scratch memory growing with the tree; updating keys already there (<see cref="CommitW1SizedUpdates"/>) nothing grows,
/// and what it allocates is what every commit allocates.
/// Run with: dotnet run -c Release --project benchmarks/Storage.Benchmarks -- --bdn --filter '*CommitBenchmarks*'
/// </summary>
[MemoryDiagnoser]
public class CommitBenchmarks
{
    private const int FilledKeys = 100_000;
    private const int PutsPerTransaction = 100;

    private string? _directory;
    private StorageEnvironment? _environment;
    private readonly RandomKeySource _keys = new();

    /// <summary>The keys the set-up wrote, from the first again and again.</summary>
    private readonly RandomKeySource _existingKeys = new(wrapAfterKeys: FilledKeys);
    private readonly ValueSource _values = new();
    private readonly KeyValueBatch _batch = new(PutsPerTransaction);

    [GlobalSetup]
    public void Setup()
    {
        var root = Directory.Exists("/dev/shm") ? "/dev/shm" : RepositoryPaths.Scratch(RepositoryPaths.FindRoot());
        _directory = Path.Combine(root, $"storage-bdn-commit-{Environment.ProcessId}");
        if (Directory.Exists(_directory)) Directory.Delete(_directory, recursive: true);
        _environment = StorageEnvironment.Open(_directory);
        for (var written = 0; written < FilledKeys; written += PutsPerTransaction) CommitOne(_keys);
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _environment?.Dispose();
        if (_directory is not null && Directory.Exists(_directory)) Directory.Delete(_directory, recursive: true);
    }

    [Benchmark]
    public long CommitW1Sized() => CommitOne(_keys);

    [Benchmark]
    public long CommitW1SizedUpdates() => CommitOne(_existingKeys);

    private long CommitOne(IKeySource keys)
    {
        _batch.Fill(keys, _values, PutsPerTransaction);
        using var tx = _environment!.BeginWrite();
        var tree = tx.OpenOrCreateTree(FilledEnvironment.TreeName);
        for (var i = 0; i < _batch.Count; i++) tree.Put(_batch.Key(i), _batch.Value(i));
        return tx.Commit().JournalBytes;
    }
}
