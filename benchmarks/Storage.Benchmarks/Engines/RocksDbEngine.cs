using Storage.Benchmarks.Measurement;

namespace Storage.Benchmarks.Engines;

/// <summary>
/// RocksDB through RocksDbSharp (the RocksDB package, which carries its own native librocksdb): default options but
/// for create_if_missing, WAL on, and every durable write synced.
/// </summary>
internal sealed class RocksDbEngine : IHotBackupEngine
{
    private static readonly Lazy<string?> s_unavailableReason = new(RocksDbEngineInstance.Probe);

    public string Name => "rocksdb";

    /// <summary>The SST files: RocksDB's tables once the memtable is flushed (the WAL and MANIFEST count in the directory size).</summary>
    public long? DataFileBytes(string directory) => FileSizes.OfMatching(directory, "*.sst");

    public string? UnavailableReason => s_unavailableReason.Value;

    public IEngineInstance Open(string directory, CommitMode mode = CommitMode.Durable) => new RocksDbEngineInstance(directory, mode);

    public string BackupMethod => "the backup engine (memtable flushed first, files copied and synced); restore: restore_db_from_latest_backup";

    public string? TransactionName => "last sequence number (one per put)";

    public RestoredBackup Restore(EngineBackup backup, string targetDirectory)
    {
        RocksDbEngineInstance.RestoreLatestBackup(backup.Directory, targetDirectory);
        return new RestoredBackup(null, []);
    }

    public long? RestoredTransaction(string directory) => RocksDbEngineInstance.LastSequenceNumber(directory);
}
