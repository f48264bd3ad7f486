using LightningDB;
using Storage.Benchmarks.Measurement;

namespace Storage.Benchmarks.Engines;

/// <summary>LMDB through LightningDB (see <see cref="LmdbNativeLibrary"/> for which liblmdb it runs on).</summary>
internal sealed class LmdbEngine : IEngine
{
    private static readonly Lazy<string?> s_unavailableReason = new(Probe);

    public string Name => "lmdb";

    public long? DataFileBytes(string directory) => FileSizes.Of(Path.Combine(directory, "data.mdb"));

    public string? UnavailableReason => s_unavailableReason.Value;

    public IEngineInstance Open(string directory, CommitMode mode = CommitMode.Durable) => new LmdbEngineInstance(directory, mode);

    /// <summary>Null when a liblmdb loads (asked for its version), else why not.</summary>
    private static string? Probe()
    {
        const string missing = "missing (neither LightningDB's own liblmdb nor the system's liblmdb.so.0 (liblmdb0) loads)";
        if (!LmdbNativeLibrary.Loads()) return missing;
        try
        {
            _ = LmdbEngineInstance.NativeVersion();
            return null;
        }
        catch (Exception e) when (e is DllNotFoundException or EntryPointNotFoundException or BadImageFormatException)
        {
            return missing;
        }
    }
}
