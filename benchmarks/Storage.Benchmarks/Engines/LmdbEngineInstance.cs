using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Engines;

/// <summary>
/// An LMDB environment with default (durable: synced at every commit) flags and one named database.
/// </summary>
internal sealed unsafe class LmdbEngineInstance : IEngineInstance
{
    public const string DatabaseName = "kv";

    // The map is reserved address space, not disk: the file grows with the data.
    private static readonly ulong s_mapSizeBytes = 4UL << 30;
    private const uint MaxDatabases = 4;
    private const uint FileMode = 0x1A4; // 0644

    private readonly nint _env;
    private readonly uint _dbi;
    private bool _disposed;

    public LmdbEngineInstance(string directory)
    {
        LmdbNative.Check(LmdbNative.EnvCreate(out _env), "mdb_env_create");
        try
        {
            LmdbNative.Check(LmdbNative.EnvSetMapSize(_env, checked((nuint)s_mapSizeBytes)), "mdb_env_set_mapsize");
            LmdbNative.Check(LmdbNative.EnvSetMaxDbs(_env, MaxDatabases), "mdb_env_set_maxdbs");
            Directory.CreateDirectory(directory);
            LmdbNative.Check(LmdbNative.EnvOpen(_env, directory, 0, FileMode), "mdb_env_open");
            LmdbNative.Check(LmdbNative.TxnBegin(_env, 0, 0, out var txn), "mdb_txn_begin");
            try
            {
                LmdbNative.Check(LmdbNative.DbiOpen(txn, DatabaseName, LmdbNative.Create, out _dbi), "mdb_dbi_open");
            }
            catch
            {
                LmdbNative.TxnAbort(txn);
                throw;
            }
            LmdbNative.Check(LmdbNative.TxnCommit(txn), "mdb_txn_commit");
        }
        catch
        {
            LmdbNative.EnvClose(_env);
            throw;
        }
    }

    /// <summary>LMDB serialises write transactions itself; the instance keeps no per-write state.</summary>
    public IEngineWriter CreateWriter() => new Writer(this);

    private sealed class Writer(LmdbEngineInstance instance) : IEngineWriter
    {
        public void WriteDurable(KeyValueBatch batch) => instance.WriteDurable(batch);

        public void Dispose()
        {
        }
    }

    public void WriteDurable(KeyValueBatch batch)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        LmdbNative.Check(LmdbNative.TxnBegin(_env, 0, 0, out var txn), "mdb_txn_begin");
        try
        {
            for (var i = 0; i < batch.Count; i++)
            {
                var keySpan = batch.Key(i);
                var valueSpan = batch.Value(i);
                fixed (byte* keyBytes = keySpan)
                fixed (byte* valueBytes = valueSpan)
                {
                    var key = new MdbValue { Size = (nuint)keySpan.Length, Data = keyBytes };
                    var value = new MdbValue { Size = (nuint)valueSpan.Length, Data = valueBytes };
                    LmdbNative.Check(LmdbNative.Put(txn, _dbi, &key, &value, 0), "mdb_put");
                }
            }
        }
        catch
        {
            LmdbNative.TxnAbort(txn);
            throw;
        }
        // mdb_txn_commit frees the transaction whether or not it succeeds.
        LmdbNative.Check(LmdbNative.TxnCommit(txn), "mdb_txn_commit");
    }

    public IEngineReader BeginRead()
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        return new LmdbEngineReader(_env, _dbi);
    }

    public IReadOnlyList<Figure> Counters() => [];

    public void Dispose()
    {
        if (_disposed) return;
        _disposed = true;
        LmdbNative.EnvClose(_env);
    }
}
