using LightningDB;

namespace Storage.Benchmarks.Engines;

/// <summary>An LMDB read-only transaction (bound to the thread that began it, as LMDB requires by default).</summary>
internal sealed class LmdbEngineReader : IEngineReader
{
    private readonly LightningTransaction _transaction;
    private readonly LightningDatabase _database;
    private readonly byte[] _valueCopy = new byte[4096];
    private bool _disposed;

    public LmdbEngineReader(LightningEnvironment environment, LightningDatabase database)
    {
        _database = database;
        _transaction = environment.BeginTransaction(TransactionBeginFlags.ReadOnly);
    }

    /// <summary>mdb_get through LightningDB's span overload: the value is a view of the map, copied out with no allocation.</summary>
    public bool TryGet(ReadOnlySpan<byte> key, out int valueLength)
    {
        var (result, _, value) = _transaction.Get(_database, key);
        if (result == MDBResultCode.NotFound)
        {
            valueLength = 0;
            return false;
        }
        result.ThrowOnError();
        var bytes = value.AsSpan();
        bytes.CopyTo(_valueCopy);
        valueLength = bytes.Length;
        return true;
    }

    public long Scan()
    {
        using var cursor = _transaction.CreateCursor(_database);
        long entries = 0;
        var (result, _, value) = cursor.First();
        while (result == MDBResultCode.Success)
        {
            value.AsSpan().CopyTo(_valueCopy);
            entries++;
            (result, _, value) = cursor.Next();
        }
        if (result != MDBResultCode.NotFound) result.ThrowOnError();
        return entries;
    }

    public void Dispose()
    {
        if (_disposed) return;
        _disposed = true;
        _transaction.Dispose();
    }
}
