using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Workloads;

namespace Storage.Benchmarks.Micro;

/// <summary>
/// The state of W9's BenchmarkDotNet cases: a directory filled once with W1's keys, W9's keys to read, and per
/// iteration a reader on an engine opened again after its files were dropped from the page cache.
/// </summary>
internal sealed class ColdMultigetSetup : IDisposable
{
    /// <summary>W9's count: the keys of one cold pass.</summary>
    public const int KeysPerPass = 10_000;

    private readonly IEngine _engine;
    private readonly string _directory;
    private IEngineInstance? _instance;
    private IEngineReader? _reader;
    private int _readerThread;

    public ColdMultigetSetup(string engineName, int filledKeys)
    {
        _engine = WorkloadBenchmarkEngines.FindAvailable(engineName);
        _directory = WorkloadBenchmarkEngines.FreshDirectory("W9", _engine);
        WorkloadBenchmarkEngines.Fill(_engine, _directory, filledKeys);
        // W9's keys: W1's sequence from a third of the way in.
        Keys = ColdMultiget.Keys(filledKeys, skip: filledKeys / 3, KeysPerPass);
    }

    public ReadOnlyMemory<byte>[] Keys { get; }

    /// <summary>Drops every file of the closed engine from the page cache, opens it and begins a reader.</summary>
    public void OpenCold()
    {
        Close();
        PageCache.DropDirectory(_directory);
        _instance = _engine.Open(_directory);
        _reader = _instance.BeginRead();
        _readerThread = Environment.CurrentManagedThreadId;
    }

    /// <summary>The reader <see cref="OpenCold"/> began, checked to be on its thread.</summary>
    public IEngineReader Reader()
    {
        if (_reader is null) throw new InvalidOperationException("No reader: the iteration set-up did not run.");
        if (Environment.CurrentManagedThreadId != _readerThread)
        {
            throw new InvalidOperationException("The reader was begun on another thread than the benchmark's.");
        }
        return _reader;
    }

    /// <summary>Ends the reader and closes the engine, so the next drop finds no page of it mapped.</summary>
    public void Close()
    {
        _reader?.Dispose();
        _reader = null;
        _instance?.Dispose();
        _instance = null;
    }

    public void Dispose()
    {
        Close();
        WorkloadBenchmarkEngines.Delete(_directory);
    }
}
