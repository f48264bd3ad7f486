using Microsoft.Data.Sqlite;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Engines;

/// <summary>
/// One SQLite database in WAL mode with synchronous=FULL (every commit fsyncs the WAL), written through
/// prepared statements that are reused for every transaction.
/// </summary>
internal sealed class SqliteEngineInstance : IHotBackupInstance
{
    public const string FileName = "kv.db";

    private readonly string _connectionString;
    private readonly SqliteConnection _connection;
    private readonly SqliteCommand _begin;
    private readonly SqliteCommand _commit;
    private readonly SqliteCommand _rollback;
    private readonly SqliteCommand _insert;
    // Bound by reference: the statement reads these arrays at every execution.
    private readonly byte[] _key = new byte[KeyFormat.KeySizeBytes];
    private readonly byte[] _value = new byte[ValueSource.ValueSizeBytes];
    private readonly string _directory;
    private bool _disposed;

    private readonly CommitMode _mode;

    public SqliteEngineInstance(string directory, CommitMode mode = CommitMode.Durable)
    {
        _mode = mode;
        Directory.CreateDirectory(directory);
        _directory = directory;
        // No pooling, so that Dispose really closes the database (checkpointing the WAL into it).
        _connectionString = new SqliteConnectionStringBuilder
        {
            DataSource = Path.Combine(directory, FileName),
            Mode = SqliteOpenMode.ReadWriteCreate,
            Pooling = false,
        }.ToString();
        _connection = new SqliteConnection(_connectionString);
        try
        {
            _connection.Open();
            Execute(_connection, "PRAGMA journal_mode=WAL;");
            // NORMAL in WAL mode: commits are not synced, checkpoints (and the one at close) are.
            Execute(_connection, mode == CommitMode.Lazy ? "PRAGMA synchronous=NORMAL;" : "PRAGMA synchronous=FULL;");
            Execute(_connection, "CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID;");
            _begin = Prepare(_connection, "BEGIN IMMEDIATE;");
            _commit = Prepare(_connection, "COMMIT;");
            _rollback = Prepare(_connection, "ROLLBACK;");
            _insert = Prepare(_connection, "INSERT OR REPLACE INTO kv(k, v) VALUES ($k, $v);",
                ("$k", _key), ("$v", _value));
        }
        catch
        {
            _connection.Dispose();
            throw;
        }
    }

    public void Commit(KeyValueBatch batch) => RunBatch(batch, _insert, withValues: true);

    /// <summary>One transaction running <paramref name="statement"/> once per key of the batch (and value, <paramref name="withValues"/>).</summary>
    private void RunBatch(KeyValueBatch batch, SqliteCommand statement, bool withValues)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        _begin.ExecuteNonQuery();
        try
        {
            for (var i = 0; i < batch.Count; i++)
            {
                batch.Key(i).CopyTo(_key);
                if (withValues) batch.Value(i).CopyTo(_value);
                statement.ExecuteNonQuery();
            }
            _commit.ExecuteNonQuery();
        }
        catch
        {
            TryRollback();
            throw;
        }
    }

    public void CommitDeletes(KeyValueBatch batch)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        _delete ??= Prepare(_connection, "DELETE FROM kv WHERE k = $k;", ("$k", _key));
        RunBatch(batch, _delete, withValues: false);
    }

    private SqliteCommand? _delete;

    /// <summary>VACUUM rebuilds the database file without its free pages; then a checkpoint moves it out of the WAL and truncates the WAL.</summary>
    public string? Compact()
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        Execute(_connection, "VACUUM;");
        Execute(_connection, "PRAGMA wal_checkpoint(TRUNCATE);");
        return null;
    }

    /// <summary>A connection of its own with its own prepared statements (a connection is not shared across threads).</summary>
    public IEngineWriter CreateWriter() => new Writer(new SqliteEngineInstance(_directory, _mode));

    private sealed class Writer(SqliteEngineInstance connection) : IEngineWriter
    {
        public void Commit(KeyValueBatch batch) => connection.Commit(batch);

        public void Dispose() => connection.Dispose();
    }

    public IEngineReader BeginRead()
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        return new SqliteEngineReader(_connectionString);
    }

    public IReadOnlyList<Figure> Counters() => [];

    /// <summary>
    /// SQLite's online backup API from a connection of its own, in one step (<c>sqlite3_backup_step(-1)</c>): one read
    /// transaction of the WAL database, so writers on other connections go on; the copy is a database file of its own.
    /// </summary>
    public EngineBackup Backup(string directory)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        Directory.CreateDirectory(directory);
        using var source = new SqliteConnection(_connectionString);
        using var destination = new SqliteConnection(new SqliteConnectionStringBuilder
        {
            DataSource = Path.Combine(directory, FileName),
            Mode = SqliteOpenMode.ReadWriteCreate,
            Pooling = false,
        }.ToString());
        source.Open();
        destination.Open();
        source.BackupDatabase(destination);
        return new EngineBackup(directory, null, []);
    }

    public void Dispose()
    {
        if (_disposed) return;
        _disposed = true;
        _insert.Dispose();
        _delete?.Dispose();
        _rollback.Dispose();
        _commit.Dispose();
        _begin.Dispose();
        _connection.Dispose();
    }

    internal static void Execute(SqliteConnection connection, string sql)
    {
        using var command = connection.CreateCommand();
        command.CommandText = sql;
        command.ExecuteNonQuery();
    }

    internal static SqliteCommand Prepare(SqliteConnection connection, string sql, params (string Name, byte[] Value)[] blobs)
    {
        var command = connection.CreateCommand();
        command.CommandText = sql;
        foreach (var (name, value) in blobs) command.Parameters.Add(name, SqliteType.Blob).Value = value;
        command.Prepare();
        return command;
    }

    private void TryRollback()
    {
        try
        {
            _rollback.ExecuteNonQuery();
        }
        catch (SqliteException)
        {
            // The failed statement may already have ended the transaction; the original error is what matters.
        }
    }
}
