using LightningDB;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Engines;

/// <summary>
/// An LMDB environment with default (durable: synced at every commit) flags and one named database.
/// </summary>
internal sealed class LmdbEngineInstance : IHotBackupInstance
{
    public const string DatabaseName = "kv";

    /// <summary>LMDB's one data file in its directory.</summary>
    public const string DataFileName = "data.mdb";

    // The map is reserved address space, not disk: the file grows with the data. 64 GiB, because a reader held
    // across W1's commits keeps LMDB from reusing the pages they free, and W1-held-reader outgrew 4 GiB.
    private const long MapSizeBytes = 64L << 30;
    private const int MaxDatabases = 4;

    private readonly LightningEnvironment _environment;
    private readonly LightningDatabase _database;
    private readonly string _version;
    private bool _disposed;

    static LmdbEngineInstance() => LmdbNativeLibrary.Register();

    private readonly CommitMode _mode;

    public LmdbEngineInstance(string directory, CommitMode mode = CommitMode.Durable)
    {
        _mode = mode;
        Directory.CreateDirectory(directory);
        _environment = new LightningEnvironment(directory, new EnvironmentConfiguration
        {
            MapSize = MapSizeBytes,
            MaxDatabases = MaxDatabases,
        });
        try
        {
            _version = VersionText(_environment.Version);
            _environment.Open(mode == CommitMode.Lazy ? EnvironmentOpenFlags.NoSync : EnvironmentOpenFlags.None);
            using var tx = _environment.BeginTransaction(TransactionBeginFlags.None);
            _database = tx.OpenDatabase(DatabaseName, new DatabaseConfiguration { Flags = DatabaseOpenFlags.Create }, closeOnDispose: false);
            tx.Commit().ThrowOnError();
        }
        catch
        {
            _environment.Dispose();
            throw;
        }
    }

    /// <summary>
    /// A hot copy through <c>mdb_env_copy2</c>: LMDB copies the data file as one read transaction sees it (every page up
    /// to the last in use, free ones too, as the plain copy does), while write transactions go on.
    /// </summary>
    public EngineBackup Backup(string directory)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        Directory.CreateDirectory(directory);
        _environment.CopyTo(directory, compact: false).ThrowOnError();
        return new EngineBackup(directory, null, []);
    }

    /// <summary>The last committed transaction id of the environment in <paramref name="directory"/>, opened read-only.</summary>
    public static long LastTransactionId(string directory)
    {
        using var environment = new LightningEnvironment(directory, new EnvironmentConfiguration { MapSize = MapSizeBytes, MaxDatabases = MaxDatabases });
        environment.Open(EnvironmentOpenFlags.ReadOnly);
        return environment.Info.LastTransactionId;
    }

    /// <summary>The version of the liblmdb LightningDB runs on (loading it).</summary>
    public static string NativeVersion()
    {
        using var environment = new LightningEnvironment(Path.GetTempPath());
        return VersionText(environment.Version);
    }

    private static string VersionText(LightningVersionInfo version) => $"{version.Major}.{version.Minor}.{version.Patch}";

    /// <summary>LMDB serialises write transactions itself; the instance keeps no per-write state.</summary>
    public IEngineWriter CreateWriter() => new Writer(this);

    private sealed class Writer(LmdbEngineInstance instance) : IEngineWriter
    {
        public void Commit(KeyValueBatch batch) => instance.Commit(batch);

        public void Dispose()
        {
        }
    }

    public void Commit(KeyValueBatch batch)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        // Disposing aborts the transaction unless it was committed.
        using var tx = _environment.BeginTransaction(TransactionBeginFlags.None);
        for (var i = 0; i < batch.Count; i++) tx.Put(_database, batch.Key(i), batch.Value(i), PutOptions.None).ThrowOnError();
        tx.Commit().ThrowOnError();
    }

    public void CommitDeletes(KeyValueBatch batch)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        using var tx = _environment.BeginTransaction(TransactionBeginFlags.None);
        for (var i = 0; i < batch.Count; i++) tx.Delete(_database, batch.Key(i)).ThrowOnError();
        tx.Commit().ThrowOnError();
    }

    /// <summary>LMDB reuses freed pages but never shrinks its file while open (only an offline compacting copy does).</summary>
    public string? Compact() => "n/a: no online compaction";

    public IEngineReader BeginRead()
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        return new LmdbEngineReader(_environment, _database);
    }

    public IReadOnlyList<Figure> Counters() => [new("liblmdb", $"{_version} ({LmdbNativeLibrary.Source})")];

    public void Dispose()
    {
        if (_disposed) return;
        _disposed = true;
        try
        {
            // MDB_NOSYNC left the commits to the kernel: one sync makes them durable.
            if (_mode == CommitMode.Lazy) _environment.Flush(force: true);
        }
        finally
        {
            _environment.Dispose();
        }
    }
}
