namespace Storage.Benchmarks.Generators;

/// <summary>
/// Random keys: xorshift64 seeded with 88172645463325252, each output written as 16 hex characters.
/// With a <see cref="wrapAfterKeys"/> limit the sequence restarts from the seed after that many keys,
/// so a reader replaying the writer's sequence only ever asks for keys that exist.
/// </summary>
internal sealed class RandomKeySource : IKeySource
{
    public const ulong Seed = 88172645463325252;

    private readonly long _wrapAfterKeys;
    private Xorshift64 _generator = new(Seed);
    private long _position;

    /// <param name="wrapAfterKeys">Restart from the seed after this many keys; 0 never restarts.</param>
    public RandomKeySource(long wrapAfterKeys = 0)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(wrapAfterKeys);
        _wrapAfterKeys = wrapAfterKeys;
    }

    public void Next(Span<byte> key)
    {
        if (_wrapAfterKeys != 0 && _position == _wrapAfterKeys)
        {
            _generator = new Xorshift64(Seed);
            _position = 0;
        }
        _position++;
        KeyFormat.Write(_generator.Next(), key);
    }

    /// <summary>Advances past <paramref name="keys"/> keys (used to start reader threads at different places).</summary>
    public void Skip(long keys)
    {
        Span<byte> discard = stackalloc byte[KeyFormat.KeySizeBytes];
        for (long i = 0; i < keys; i++) Next(discard);
    }
}
