using Storage.Benchmarks.Measurement;

namespace Storage.Benchmarks.Engines;

/// <summary>SQLite through Microsoft.Data.Sqlite: WAL, synchronous=FULL, one WITHOUT ROWID table.</summary>
internal sealed class SqliteEngine : IHotBackupEngine
{
    public string Name => "sqlite";

    public long? DataFileBytes(string directory) => FileSizes.Of(Path.Combine(directory, SqliteEngineInstance.FileName));

    public string? UnavailableReason => null;

    public IEngineInstance Open(string directory, CommitMode mode = CommitMode.Durable) => new SqliteEngineInstance(directory, mode);

    public string BackupMethod => "the online backup API (SqliteConnection.BackupDatabase, one step) from a connection of its own; restore: the copy copied into the new directory";

    /// <summary>SQLite does not number its transactions.</summary>
    public string? TransactionName => null;

    /// <summary>The backup is a database of its own: restoring it is copying its file where it is to be opened.</summary>
    public RestoredBackup Restore(EngineBackup backup, string targetDirectory)
    {
        Directory.CreateDirectory(targetDirectory);
        DurableFiles.Copy(Path.Combine(backup.Directory, SqliteEngineInstance.FileName), Path.Combine(targetDirectory, SqliteEngineInstance.FileName));
        return new RestoredBackup(null, []);
    }

    public long? RestoredTransaction(string directory) => null;
}
