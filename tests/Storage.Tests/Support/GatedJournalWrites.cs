using Storage.Faults;
using Storage.Platform;

namespace Storage.Tests.Support;

/// <summary>
/// Holds the next journal write at its start until the test releases it (and then lets it fail, if asked): a seam to
/// keep a durable write in flight while other transactions commit on top of it.
/// </summary>
internal sealed class GatedJournalWrites : IFaultInjector
{
    private readonly ManualResetEventSlim _entered = new();
    private readonly ManualResetEventSlim _released = new();
    private int _armed;
    private volatile bool _fail;

    /// <summary>Options for an environment whose journal writes go through this gate: nothing flushed unless asked, one journal file.</summary>
    public StorageOptions Options => (TestOptions.JournalOnly with { MinJournalFileSizeBytes = 4 << 20 }).WithFaults(this);

    /// <summary>The next journal write waits at its start for <see cref="Release"/>.</summary>
    public void Arm(bool fail = false)
    {
        _fail = fail;
        _entered.Reset();
        _released.Reset();
        Volatile.Write(ref _armed, 1);
    }

    /// <summary>Blocks until the gated write has started (and is waiting).</summary>
    public void WaitUntilHeld()
    {
        if (!_entered.Wait(TimeSpan.FromSeconds(30))) throw new TimeoutException("No journal write reached the gate.");
    }

    public void Release() => _released.Set();

    public void BeforeWrite(string path, long offsetBytes, long lengthBytes)
    {
        if (!ScriptedFaults.IsJournal(path) || Interlocked.Exchange(ref _armed, 0) == 0) return;
        _entered.Set();
        if (!_released.Wait(TimeSpan.FromSeconds(30))) throw new TimeoutException("The gated journal write was never released.");
        if (_fail) throw ScriptedFaults.Eio();
    }

    public void BeforeSync(string path)
    {
    }
}
