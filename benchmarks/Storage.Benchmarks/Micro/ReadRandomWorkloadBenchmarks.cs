using BenchmarkDotNet.Attributes;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Micro;

/// <summary>
/// W3 readrandom on one thread: gets of random existing keys through one reader, 1,000 per invocation, so the
/// mean is the time per get. The set-up writes W1's first <see cref="FilledKeys"/> keys (500,000 unless the
/// environment variable <c>STORAGE_BDN_FILLED_KEYS</c> says otherwise; W1's full run writes 1,000,000) in large
/// transactions, closes the engine and opens it again, as W3 opens W1's directory; the gets replay W1's key
/// sequence from its start, as W3's first thread does.
/// Run with: dotnet run -c Release --project benchmarks/Storage.Benchmarks -- --bdn --filter '*ReadRandomWorkload*' --job short
/// </summary>
[MemoryDiagnoser]
public class ReadRandomWorkloadBenchmarks
{
    private const int OperationsPerInvoke = 1_000;

    private readonly byte[] _key = new byte[KeyFormat.KeySizeBytes];
    private RandomKeySource _keys = new();
    private string? _directory;
    private IEngineInstance? _instance;
    private IEngineReader? _reader;
    private int _readerThread;

    [ParamsSource(nameof(Engines))]
    public string Engine { get; set; } = "";

    public static IEnumerable<string> Engines() => WorkloadBenchmarkEngines.Available();

    [ParamsSource(nameof(FilledKeyCounts))]
    public int FilledKeys { get; set; }

    public static IEnumerable<int> FilledKeyCounts() => WorkloadBenchmarkEngines.FilledKeyCounts();

    [GlobalSetup]
    public void Setup()
    {
        var engine = WorkloadBenchmarkEngines.FindAvailable(Engine);
        _directory = WorkloadBenchmarkEngines.FreshDirectory("W3", engine);
        WorkloadBenchmarkEngines.Fill(engine, _directory, FilledKeys);
        _instance = engine.Open(_directory);
        // Readers are bound to the thread that begins them; BenchmarkDotNet runs the set-up and the benchmark on
        // one thread, which the benchmark checks.
        _reader = _instance.BeginRead();
        _readerThread = Environment.CurrentManagedThreadId;
        _keys = new RandomKeySource(wrapAfterKeys: FilledKeys);
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _reader?.Dispose();
        _reader = null;
        _instance?.Dispose();
        _instance = null;
        WorkloadBenchmarkEngines.Delete(_directory);
    }

    /// <summary>1,000 gets of W1's keys, each value copied out; a missing key or a wrong size fails the case.</summary>
    [Benchmark(Description = "W3 readrandom, per get", OperationsPerInvoke = OperationsPerInvoke)]
    public int ReadRandom()
    {
        if (Environment.CurrentManagedThreadId != _readerThread)
        {
            throw new InvalidOperationException("The reader was begun on another thread than the benchmark's.");
        }
        var reader = _reader!;
        var bytes = 0;
        for (var i = 0; i < OperationsPerInvoke; i++)
        {
            _keys.Next(_key);
            if (!reader.TryGet(_key, out var length) || length != ValueSource.ValueSizeBytes)
            {
                throw new InvalidOperationException("A key W1 wrote was not found (or its value had the wrong size).");
            }
            bytes += length;
        }
        return bytes;
    }
}
