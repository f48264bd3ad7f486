using System.Collections.Concurrent;
using Storage.Faults;
using Storage.Platform;

namespace Storage.Tests.Support;

/// <summary>
/// A fault injector whose rules a test arms and disarms. A rule sees each write, sync or resize the engine is
/// about to issue and may return an exception to throw (an <see cref="IOException"/>, as the OS would fail it,
/// or a <see cref="PartialWriteException"/> to have a write land its first bytes and then fail).
/// Rules can be restricted to the arming thread, so that background work (journal spares, the flusher) is
/// not hit by accident. Every call is recorded.
/// </summary>
internal sealed class ScriptedFaults : IFaultInjector
{
    private readonly object _lock = new();
    private readonly List<Rule> _rules = [];

    public ConcurrentQueue<string> Log { get; } = new();

    /// <summary>How many injected failures fired.</summary>
    public int Fired => Volatile.Read(ref _fired);

    private int _fired;

    public static bool IsJournal(string path) => path.EndsWith(".journal", StringComparison.Ordinal);

    public static bool IsDataFile(string path) => Path.GetFileName(path) == "data.storage";

    /// <summary>Fails writes for which <paramref name="match"/> holds (once, or always).</summary>
    public void FailWrites(Func<string, long, long, bool> match, Func<IOException> error, bool once = true, bool thisThreadOnly = true) =>
        Add(new Rule(Call.Write, (path, offset, length) => match(path, offset, length), error, once, thisThreadOnly ? Environment.CurrentManagedThreadId : null));

    /// <summary>Fails syncs for which <paramref name="match"/> holds (once, or always).</summary>
    public void FailSyncs(Func<string, bool> match, Func<IOException> error, bool once = true, bool thisThreadOnly = true) =>
        Add(new Rule(Call.Sync, (path, _, _) => match(path), error, once, thisThreadOnly ? Environment.CurrentManagedThreadId : null));

    /// <summary>Fails resizes (to a length) for which <paramref name="match"/> holds (once, or always).</summary>
    public void FailResizes(Func<string, long, bool> match, Func<IOException> error, bool once = true, bool thisThreadOnly = true) =>
        Add(new Rule(Call.Resize, (path, length, _) => match(path, length), error, once, thisThreadOnly ? Environment.CurrentManagedThreadId : null));

    /// <summary>
    /// Holds every resize for which <paramref name="match"/> holds, on threads other than the arming one, until
    /// <see cref="ReleaseResizes"/>: a reservation stuck behind the disk.
    /// </summary>
    public void HoldResizes(Func<string, bool> match)
    {
        _released.Reset();
        Volatile.Write(ref _hold, new Hold(match, Environment.CurrentManagedThreadId));
    }

    public void ReleaseResizes()
    {
        Volatile.Write(ref _hold, null);
        _released.Set();
    }

    /// <summary>How many resizes <see cref="HoldResizes"/> has held.</summary>
    public int HeldResizes => Volatile.Read(ref _heldResizes);

    /// <summary>Waits until <see cref="HoldResizes"/> holds a resize.</summary>
    public bool WaitForHeldResize(TimeSpan timeout) => _heldOne.Wait(timeout);

    private readonly ManualResetEventSlim _heldOne = new(false);

    private Hold? _hold;

    private sealed record Hold(Func<string, bool> Match, int ThreadId);
    private readonly ManualResetEventSlim _released = new(true);
    private int _heldResizes;

    public void Clear()
    {
        lock (_lock) _rules.Clear();
    }

    public static IOException Eio() => new("Input/output error (injected)", 5);

    public static IOException Enospc() => new("No space left on device (injected)", 28);

    /// <summary>A write that puts its first <paramref name="bytes"/> bytes on disk, then fails with EIO.</summary>
    public static IOException PartialThenEio(long bytes) => new PartialWriteException(bytes, $"Input/output error after {bytes} bytes (injected)", 5);

    public void BeforeWrite(string path, long offsetBytes, long lengthBytes)
    {
        Log.Enqueue($"write {Path.GetFileName(path)} @{offsetBytes} +{lengthBytes} on {Environment.CurrentManagedThreadId}");
        Check(Call.Write, path, offsetBytes, lengthBytes);
    }

    public void BeforeSync(string path)
    {
        Log.Enqueue($"sync {Path.GetFileName(path)} on {Environment.CurrentManagedThreadId}");
        Check(Call.Sync, path, 0, 0);
    }

    public void BeforeResize(string path, long lengthBytes)
    {
        Log.Enqueue($"resize {Path.GetFileName(path)} to {lengthBytes} on {Environment.CurrentManagedThreadId}");
        if (Volatile.Read(ref _hold) is { } hold && hold.ThreadId != Environment.CurrentManagedThreadId && hold.Match(path))
        {
            Interlocked.Increment(ref _heldResizes);
            _heldOne.Set();
            _released.Wait();
        }
        Check(Call.Resize, path, lengthBytes, 0);
    }

    private void Add(Rule rule)
    {
        lock (_lock) _rules.Add(rule);
    }

    private void Check(Call call, string path, long offset, long length)
    {
        Exception? error = null;
        lock (_lock)
        {
            for (var i = 0; i < _rules.Count; i++)
            {
                var rule = _rules[i];
                if (rule.Call != call) continue;
                if (rule.ThreadId is { } thread && thread != Environment.CurrentManagedThreadId) continue;
                if (!rule.Match(path, offset, length)) continue;
                if (rule.Once) _rules.RemoveAt(i);
                error = rule.Error();
                break;
            }
        }
        if (error is null) return;
        Interlocked.Increment(ref _fired);
        Log.Enqueue($"  -> injected {error.Message}");
        throw error;
    }

    private enum Call
    {
        Write,
        Sync,
        Resize,
    }

    private sealed record Rule(Call Call, Func<string, long, long, bool> Match, Func<IOException> Error, bool Once, int? ThreadId);
}
