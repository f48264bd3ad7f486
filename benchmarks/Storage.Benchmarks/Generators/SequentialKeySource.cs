namespace Storage.Benchmarks.Generators;

/// <summary>Sequential keys: the counter 0, 1, 2, ... written as 16 hex characters.</summary>
internal sealed class SequentialKeySource : IKeySource
{
    private ulong _next;

    public void Next(Span<byte> key) => KeyFormat.Write(_next++, key);
}
