using LightningDB;
using Storage.Benchmarks.Measurement;

namespace Storage.Benchmarks.Engines;

/// <summary>LMDB through LightningDB (see <see cref="LmdbNativeLibrary"/> for which liblmdb it runs on).</summary>
internal sealed class LmdbEngine : IHotBackupEngine
{
    private static readonly Lazy<string?> s_unavailableReason = new(Probe);

    public string Name => "lmdb";

    public long? DataFileBytes(string directory) => FileSizes.Of(Path.Combine(directory, LmdbEngineInstance.DataFileName));

    public string? UnavailableReason => s_unavailableReason.Value;

    public IEngineInstance Open(string directory, CommitMode mode = CommitMode.Durable) => new LmdbEngineInstance(directory, mode);

    public string BackupMethod => "mdb_env_copy2 (LightningEnvironment.CopyTo, not compacting): the data file as one read transaction sees it; restore: the copy copied into the new directory";

    public string? TransactionName => "transaction id";

    /// <summary>LMDB's copy is an environment of its own: restoring it is copying its data file where it is to be opened.</summary>
    public RestoredBackup Restore(EngineBackup backup, string targetDirectory)
    {
        Directory.CreateDirectory(targetDirectory);
        DurableFiles.Copy(Path.Combine(backup.Directory, LmdbEngineInstance.DataFileName), Path.Combine(targetDirectory, LmdbEngineInstance.DataFileName));
        return new RestoredBackup(null, []);
    }

    public long? RestoredTransaction(string directory) => LmdbEngineInstance.LastTransactionId(directory);

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
