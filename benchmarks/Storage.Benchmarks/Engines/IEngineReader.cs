namespace Storage.Benchmarks.Engines;

/// <summary>A snapshot read transaction of one engine, used by one thread.</summary>
internal interface IEngineReader : IDisposable
{
    /// <summary>
    /// Looks the key up and copies its value into the reader's own buffer (as LevelDB's db_bench does),
    /// so every engine pays for reading the value; returns false when the key is missing.
    /// </summary>
    bool TryGet(ReadOnlySpan<byte> key, out int valueLength);

    /// <summary>Walks every entry in key order with a cursor and returns how many there were.</summary>
    long Scan();
}
