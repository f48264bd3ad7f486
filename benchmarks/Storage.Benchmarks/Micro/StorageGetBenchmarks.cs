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
    private const int OperationsPerInvoke = 1_000;

    private readonly byte[] _key = new byte[KeyFormat.KeySizeBytes];
    private FilledEnvironment? _filled;
    private Tree? _tree;
    private RandomKeySource _keys = new(FilledKeys);

    [GlobalSetup]
    public void Setup()
    {
        _filled = new FilledEnvironment("bdn", FilledKeys);
        _tree = _filled.Tree;
        _keys = new RandomKeySource(FilledKeys);
    }

    [GlobalCleanup]
    public void Cleanup() => _filled?.Dispose();

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
