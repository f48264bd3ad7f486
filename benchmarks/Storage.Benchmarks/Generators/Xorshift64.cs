namespace Storage.Benchmarks.Generators;

/// <summary>Marsaglia's xorshift64 (13, 7, 17): the generator WORKLOADS.md names for keys and values.</summary>
internal struct Xorshift64
{
    private ulong _state;

    public Xorshift64(ulong seed)
    {
        // A zero state would stay zero forever.
        if (seed == 0) throw new ArgumentOutOfRangeException(nameof(seed), seed, "Must not be zero.");
        _state = seed;
    }

    /// <summary>Steps the state and returns it (the seed itself is never returned).</summary>
    public ulong Next()
    {
        var x = _state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        _state = x;
        return x;
    }
}
