using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Engines;

/// <summary>An engine whose instances take full hot backups (<see cref="IHotBackupInstance"/>), and which restores them (W11).</summary>
internal interface IHotBackupEngine : IEngine
{
    /// <summary>The engine's own backup and restore, as the report names them.</summary>
    string BackupMethod { get; }

    /// <summary>What <see cref="RestoredTransaction"/> counts ("transaction", "sequence number"); null where the engine numbers nothing.</summary>
    string? TransactionName { get; }

    /// <summary>
    /// Restores <paramref name="backup"/> into <paramref name="targetDirectory"/>, which does not exist yet, with the
    /// engine's own restore, so that the engine opens it there; the caller then syncs the directory.
    /// </summary>
    RestoredBackup Restore(EngineBackup backup, string targetDirectory);

    /// <summary>
    /// The committed state a restored directory holds, as the engine numbers it (storage's transaction, LMDB's transaction
    /// id, RocksDB's last sequence number); null where it numbers none. Read without writing to the directory.
    /// </summary>
    long? RestoredTransaction(string directory);
}

/// <summary>An open engine that can copy one committed state of itself while other threads go on committing through it.</summary>
internal interface IHotBackupInstance : IEngineInstance
{
    /// <summary>
    /// Writes a full backup into the empty directory <paramref name="directory"/> with the engine's own hot backup, while
    /// other threads commit; returns when the engine says it is done (the caller then syncs the directory).
    /// </summary>
    EngineBackup Backup(string directory);
}

/// <summary>What an engine's hot backup wrote.</summary>
/// <param name="Directory">The backup's directory.</param>
/// <param name="Transaction">The committed state it holds, where the engine says so when backing up (storage's transaction); else null.</param>
/// <param name="Figures">Engine-specific figures of the backup.</param>
internal sealed record EngineBackup(string Directory, long? Transaction, IReadOnlyList<Figure> Figures);

/// <summary>What an engine's restore made.</summary>
/// <param name="Transaction">The committed state the restore says it holds, where it says so (storage); else null.</param>
/// <param name="Figures">Engine-specific figures of the restore.</param>
internal sealed record RestoredBackup(long? Transaction, IReadOnlyList<Figure> Figures);
