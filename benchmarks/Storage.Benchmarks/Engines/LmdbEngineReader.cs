namespace Storage.Benchmarks.Engines;

/// <summary>An LMDB read-only transaction (bound to the thread that began it, as LMDB requires by default).</summary>
internal sealed unsafe class LmdbEngineReader : IEngineReader
{
    private readonly nint _txn;
    private readonly uint _dbi;
    private readonly byte[] _valueCopy = new byte[4096];
    private bool _disposed;

    public LmdbEngineReader(nint env, uint dbi)
    {
        _dbi = dbi;
        LmdbNative.Check(LmdbNative.TxnBegin(env, 0, LmdbNative.ReadOnly, out _txn), "mdb_txn_begin");
    }

    public bool TryGet(ReadOnlySpan<byte> key, out int valueLength)
    {
        fixed (byte* keyBytes = key)
        {
            var keyValue = new MdbValue { Size = (nuint)key.Length, Data = keyBytes };
            MdbValue data;
            var result = LmdbNative.Get(_txn, _dbi, &keyValue, &data);
            if (result == LmdbNative.NotFound)
            {
                valueLength = 0;
                return false;
            }
            LmdbNative.Check(result, "mdb_get");
            valueLength = checked((int)data.Size);
            new ReadOnlySpan<byte>(data.Data, valueLength).CopyTo(_valueCopy);
            return true;
        }
    }

    public long Scan()
    {
        LmdbNative.Check(LmdbNative.CursorOpen(_txn, _dbi, out var cursor), "mdb_cursor_open");
        try
        {
            long entries = 0;
            MdbValue key;
            MdbValue data;
            var operation = LmdbNative.CursorFirst;
            while (true)
            {
                var result = LmdbNative.CursorGet(cursor, &key, &data, operation);
                if (result == LmdbNative.NotFound) return entries;
                LmdbNative.Check(result, "mdb_cursor_get");
                new ReadOnlySpan<byte>(data.Data, checked((int)data.Size)).CopyTo(_valueCopy);
                entries++;
                operation = LmdbNative.CursorNext;
            }
        }
        finally
        {
            LmdbNative.CursorClose(cursor);
        }
    }

    public void Dispose()
    {
        if (_disposed) return;
        _disposed = true;
        LmdbNative.TxnAbort(_txn);
    }
}
