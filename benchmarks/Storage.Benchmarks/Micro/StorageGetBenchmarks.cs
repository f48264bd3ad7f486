using BenchmarkDotNet.Attributes;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Micro;

/// <summary>
/// The inner loop of W3 in isolation: making a random key, and looking it up with Storage's TryGet in a
/// read transaction over an environment filled as W1 fills it (scaled down).
/// </summary>
[MemoryDiagnoser]
public class StorageGetBenchmarks
{
    private const int FilledKeys = 100_000;
    private const int PutsPerTransaction = 1_000;
    private const int OperationsPerInvoke = 1_000;
    private const string TreeName = "kv";

    private readonly byte[] _key = new byte[KeyFormat.KeySizeBytes];
    private string _directory = "";
    private StorageEnvironment? _environment;
    private ReadTransaction? _read;
    private Tree? _tree;
    private RandomKeySource _keys = new(FilledKeys);

    [GlobalSetup]
    public void Setup()
    {
        _directory = Path.Combine(RepositoryPaths.Scratch(RepositoryPaths.FindRoot()), $"bdn-{Environment.ProcessId}");
        if (Directory.Exists(_directory)) Directory.Delete(_directory, recursive: true);
        _environment = StorageEnvironment.Open(_directory);
        var keys = new RandomKeySource();
        var values = new ValueSource();
        var batch = new KeyValueBatch(PutsPerTransaction);
        for (var written = 0; written < FilledKeys; written += PutsPerTransaction)
        {
            batch.Fill(keys, values, PutsPerTransaction);
            using var tx = _environment.BeginWrite();
            var tree = tx.OpenOrCreateTree(TreeName);
            for (var i = 0; i < batch.Count; i++) tree.Put(batch.Key(i), batch.Value(i));
            tx.Commit();
        }
        _read = _environment.BeginRead();
        _tree = _read.OpenTree(TreeName);
        _keys = new RandomKeySource(FilledKeys);
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _read?.Dispose();
        _environment?.Dispose();
        if (Directory.Exists(_directory)) Directory.Delete(_directory, recursive: true);
    }

    [Benchmark(OperationsPerInvoke = OperationsPerInvoke)]
    public int NextRandomKey()
    {
        var sum = 0;
        for (var i = 0; i < OperationsPerInvoke; i++)
        {
            _keys.Next(_key);
            sum += _key[KeyFormat.KeySizeBytes - 1];
        }
        return sum;
    }

    [Benchmark(OperationsPerInvoke = OperationsPerInvoke)]
    public int TryGetRandomExistingKey()
    {
        var found = 0;
        for (var i = 0; i < OperationsPerInvoke; i++)
        {
            _keys.Next(_key);
            if (_tree!.TryGet(_key, out var value)) found += value.Length;
        }
        return found;
    }
}
