namespace Storage.Benchmarks.Generators;

/// <summary>Produces the keys of a workload one at a time into a caller's buffer (no allocation).</summary>
internal interface IKeySource
{
    /// <summary>Writes the next key (<see cref="KeyFormat.KeySizeBytes"/> bytes).</summary>
    void Next(Span<byte> key);
}
