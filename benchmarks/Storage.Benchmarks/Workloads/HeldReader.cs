using Storage.Benchmarks.Engines;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// A read transaction begun and held by a thread of its own (a reader is used on one thread only), idle
/// until <see cref="Release"/>: what a forgotten or very long reader does to the writer.
/// </summary>
internal sealed class HeldReader : IDisposable
{
    private readonly Thread _thread;
    private readonly ManualResetEventSlim _begun = new();
    private readonly ManualResetEventSlim _release = new();
    private Exception? _failure;
    private bool _released;

    private HeldReader(IEngineInstance instance)
    {
        _thread = new Thread(() => Hold(instance)) { IsBackground = true, Name = "held reader" };
        _thread.Start();
        _begun.Wait();
        if (_failure is not null) throw new InvalidOperationException("Could not begin the held reader.", _failure);
    }

    /// <summary>Begins the reader and returns once it holds its snapshot.</summary>
    public static HeldReader Begin(IEngineInstance instance) => new(instance);

    /// <summary>Ends the reader (on its own thread) and waits until it has.</summary>
    public void Release()
    {
        if (_released) return;
        _released = true;
        _release.Set();
        _thread.Join();
        if (_failure is not null) throw new InvalidOperationException("The held reader failed.", _failure);
    }

    private void Hold(IEngineInstance instance)
    {
        IEngineReader? reader = null;
        try
        {
            reader = instance.BeginRead();
        }
        catch (Exception e)
        {
            _failure = e;
        }
        _begun.Set();
        if (reader is null) return;
        _release.Wait();
        try
        {
            reader.Dispose();
        }
        catch (Exception e)
        {
            _failure = e;
        }
    }

    public void Dispose()
    {
        try
        {
            Release();
        }
        catch (InvalidOperationException)
        {
            // Disposing after a failed workload: the workload's own exception is the one to report.
        }
        _begun.Dispose();
        _release.Dispose();
    }
}
