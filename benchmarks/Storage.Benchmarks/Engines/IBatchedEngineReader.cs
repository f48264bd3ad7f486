namespace Storage.Benchmarks.Engines;

/// <summary>A reader that can look a batch of keys up in one call (W9's batched pass).</summary>
internal interface IBatchedEngineReader : IEngineReader
{
    /// <summary>
    /// Looks every key up in one batch and copies each value found into the reader's own buffer; returns how
    /// many were found and, through <paramref name="wrongSizes"/>, how many values were not <paramref name="valueSizeBytes"/> long.
    /// </summary>
    int GetMany(ReadOnlyMemory<byte>[] keys, int valueSizeBytes, out int wrongSizes);
}
