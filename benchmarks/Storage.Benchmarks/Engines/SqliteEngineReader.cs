using Microsoft.Data.Sqlite;
using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Engines;

/// <summary>A connection of its own holding a deferred read transaction, with a prepared point query.</summary>
internal sealed class SqliteEngineReader : IEngineReader
{
    private readonly SqliteConnection _connection;
    private readonly SqliteCommand _select;
    private readonly SqliteCommand _scan;
    private readonly byte[] _key = new byte[KeyFormat.KeySizeBytes];
    private readonly byte[] _valueCopy = new byte[4096];
    private bool _disposed;

    public SqliteEngineReader(string connectionString)
    {
        _connection = new SqliteConnection(connectionString);
        try
        {
            _connection.Open();
            // Deferred: the snapshot starts at the first read, and no write lock is taken.
            SqliteEngineInstance.Execute(_connection, "BEGIN DEFERRED;");
            _select = SqliteEngineInstance.Prepare(_connection, "SELECT v FROM kv WHERE k = $k;", ("$k", _key));
            _scan = SqliteEngineInstance.Prepare(_connection, "SELECT k, v FROM kv ORDER BY k;");
        }
        catch
        {
            _connection.Dispose();
            throw;
        }
    }

    public bool TryGet(ReadOnlySpan<byte> key, out int valueLength)
    {
        key.CopyTo(_key);
        using var reader = _select.ExecuteReader();
        if (!reader.Read())
        {
            valueLength = 0;
            return false;
        }
        valueLength = checked((int)reader.GetBytes(0, 0, _valueCopy, 0, _valueCopy.Length));
        return true;
    }

    public long Scan()
    {
        using var reader = _scan.ExecuteReader();
        long entries = 0;
        while (reader.Read())
        {
            reader.GetBytes(1, 0, _valueCopy, 0, _valueCopy.Length);
            entries++;
        }
        return entries;
    }

    public void Dispose()
    {
        if (_disposed) return;
        _disposed = true;
        _scan.Dispose();
        _select.Dispose();
        SqliteEngineInstance.Execute(_connection, "COMMIT;");
        _connection.Dispose();
    }
}
