namespace Storage.Faults;

/// <summary>What the native fault seam counted since it was last armed: calls per kind, and how many a rule hit.</summary>
internal sealed class PalFaultCounts
{
    private readonly long[] _calls;
    private readonly long[] _fired;

    public PalFaultCounts(long[] calls, long[] fired, bool armed)
    {
        _calls = calls;
        _fired = fired;
        Armed = armed;
    }

    public bool Armed { get; }

    public long Calls(PalFaultKind kind) => _calls[(int)kind];

    public long Fired(PalFaultKind kind) => _fired[(int)kind];

    public long TotalFired => _fired.Sum();
}
