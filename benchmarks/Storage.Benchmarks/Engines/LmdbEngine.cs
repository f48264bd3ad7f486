namespace Storage.Benchmarks.Engines;

/// <summary>LMDB through a small P/Invoke binding to the system's liblmdb0.</summary>
internal sealed class LmdbEngine : IEngine
{
    public string Name => "lmdb";

    public string DataFileName => "data.mdb";

    public string? UnavailableReason => LmdbNative.TryLoad() ? null : "missing (liblmdb0 not installed)";

    public IEngineInstance Open(string directory) => new LmdbEngineInstance(directory);
}
