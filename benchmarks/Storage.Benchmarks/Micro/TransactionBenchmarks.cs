using BenchmarkDotNet.Attributes;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Micro;

/// <summary>
/// What beginning and ending a transaction costs (a read per request is the common pattern): begin and dispose,
/// begin a read for one lookup, and begin and dispose the write transaction without changes. With
/// <see cref="TrackStacks"/> every begin also records its stack (<c>StorageOptions.TrackTransactionStacks</c>).
/// Run with: dotnet run -c Release --project benchmarks/Storage.Benchmarks -- --bdn --filter '*TransactionBenchmarks*'
/// </summary>
[MemoryDiagnoser]
public class TransactionBenchmarks
{
    private const int FilledKeys = 100_000;
    private const int OperationsPerInvoke = 1_000;

    private readonly byte[] _key = new byte[KeyFormat.KeySizeBytes];
    private FilledEnvironment? _filled;
    private StorageEnvironment? _environment;
    private RandomKeySource _keys = new(FilledKeys);

    [Params(false, true)]
    public bool TrackStacks { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        _filled = new FilledEnvironment("bdn-tx", FilledKeys, StorageOptions.Default with { TrackTransactionStacks = TrackStacks });
        _environment = _filled.Storage;
        _keys = new RandomKeySource(FilledKeys);
    }

    [GlobalCleanup]
    public void Cleanup() => _filled?.Dispose();

    [Benchmark(OperationsPerInvoke = OperationsPerInvoke)]
    public long BeginReadDispose()
    {
        long sum = 0;
        for (var i = 0; i < OperationsPerInvoke; i++)
        {
            using var tx = _environment!.BeginRead();
            sum += tx.TransactionId;
        }
        return sum;
    }

    [Benchmark(OperationsPerInvoke = OperationsPerInvoke)]
    public int BeginReadGetDispose()
    {
        var found = 0;
        for (var i = 0; i < OperationsPerInvoke; i++)
        {
            _keys.Next(_key);
            using var tx = _environment!.BeginRead();
            if (tx.OpenTree(FilledEnvironment.TreeName).TryGet(_key, out var value)) found += value.Length;
        }
        return found;
    }

    [Benchmark(OperationsPerInvoke = OperationsPerInvoke)]
    public long BeginWriteDispose()
    {
        long sum = 0;
        for (var i = 0; i < OperationsPerInvoke; i++)
        {
            using var tx = _environment!.BeginWrite();
            sum += tx.TransactionId;
        }
        return sum;
    }
}
