namespace Storage.Benchmarks.Engines;

/// <summary>
/// RocksDB has a column in the report but no binding yet: no RocksDB package is in the package source
/// this project builds from.
/// </summary>
internal sealed class RocksDbEngine : IEngine
{
    public string Name => "rocksdb";

    public string DataFileName => "CURRENT";

    public string? UnavailableReason => "not available (no RocksDB NuGet package in the package source)";

    public IEngineInstance Open(string directory) => throw new NotSupportedException(UnavailableReason);
}
