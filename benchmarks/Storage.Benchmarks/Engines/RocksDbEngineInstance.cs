using System.Globalization;
using RocksDbSharp;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Engines;

/// <summary>
/// One RocksDB database with default options, WAL on: a transaction is one <see cref="WriteBatch"/> written with
/// sync=true. Closing flushes the memtable into SST files first, as the other engines write everything into their
/// data files when they close.
/// </summary>
internal sealed class RocksDbEngineInstance : IHotBackupInstance
{
    private const int Levels = 7; // RocksDB's default num_levels

    private readonly DbOptions _options;
    private readonly RocksDb _db;
    private readonly ColumnFamilyHandle _defaultFamily;
    private readonly WriteOptions _durable;
    private readonly WriteBatch _batch = new();
    private IReadOnlyList<Figure> _figuresAtClose = [];
    private bool _disposed;

    public RocksDbEngineInstance(string directory, CommitMode mode = CommitMode.Durable)
    {
        // sync=false leaves the WAL to the kernel; closing flushes the memtable into synced SST files.
        _durable = new WriteOptions().SetSync(mode == CommitMode.Durable);
        Directory.CreateDirectory(directory);
        _options = new DbOptions().SetCreateIfMissing(true);
        // Opened with its column families (only the default one), so that the default family's handle is at hand.
        _db = RocksDb.Open(_options, directory, new ColumnFamilies());
        _defaultFamily = _db.GetDefaultColumnFamily();
    }

    /// <summary>Null when the native library loads and opens a throwaway database, else why not.</summary>
    public static string? Probe()
    {
        var directory = Directory.CreateTempSubdirectory("rocksdb-probe-");
        try
        {
            new RocksDbEngineInstance(directory.FullName).Dispose();
            return null;
        }
        catch (Exception e) when (e is DllNotFoundException or EntryPointNotFoundException or BadImageFormatException
            or TypeInitializationException or NativeImport.NativeLoadException or RocksDbSharpException)
        {
            return $"missing (could not open a throwaway database: {e.GetBaseException().Message.Split('\n')[0]})";
        }
        finally
        {
            directory.Delete(recursive: true);
        }
    }

    public void Commit(KeyValueBatch batch)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        Write(_db, _batch, _durable, batch);
    }

    private static void Write(RocksDb db, WriteBatch writeBatch, WriteOptions durable, KeyValueBatch batch)
    {
        writeBatch.Clear();
        for (var i = 0; i < batch.Count; i++) writeBatch.Put(batch.Key(i), batch.Value(i));
        db.Write(writeBatch, durable);
    }

    public void CommitDeletes(KeyValueBatch batch)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        _batch.Clear();
        for (var i = 0; i < batch.Count; i++) _batch.Delete(batch.Key(i).ToArray());
        _db.Write(_batch, _durable);
    }

    /// <summary>A manual compaction of the whole key range: tombstones and the values they cover are dropped from the SSTs.</summary>
    public string? Compact()
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        _db.CompactRange((byte[]?)null, null);
        return null;
    }

    /// <summary>
    /// A write batch of its own on the shared database: RocksDB groups the synced writes of concurrent writers
    /// into one WAL write and sync itself.
    /// </summary>
    public IEngineWriter CreateWriter()
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        return new Writer(this);
    }

    private sealed class Writer(RocksDbEngineInstance instance) : IEngineWriter
    {
        private readonly WriteBatch _batch = new();

        public void Commit(KeyValueBatch batch) => Write(instance._db, _batch, instance._durable, batch);

        public void Dispose() => _batch.Dispose();
    }

    public IEngineReader BeginRead()
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        return new RocksDbEngineReader(_db, _defaultFamily);
    }

    /// <summary>
    /// A backup through RocksDB's backup engine (reached through the package's native calls, as it has no managed
    /// wrapper): the memtable flushed first, then the live SST files, MANIFEST and OPTIONS copied into
    /// <paramref name="directory"/> and synced, while writes go on. A checkpoint would hard-link the SST files
    /// instead of copying them, which copies no data on the same file system.
    /// </summary>
    public EngineBackup Backup(string directory)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        var native = Native.Instance;
        var engine = native.rocksdb_backup_engine_open(_options.Handle, directory, out var error);
        ThrowOnError(error);
        try
        {
            native.rocksdb_backup_engine_create_new_backup_flush(engine, _db.Handle, 1, out error);
            ThrowOnError(error);
            var info = native.rocksdb_backup_engine_get_backup_info(engine);
            try
            {
                var last = native.rocksdb_backup_engine_info_count(info) - 1;
                return new EngineBackup(directory, null,
                [
                    new("backup: files / bytes as the backup engine counts them",
                        $"{Format.Count(native.rocksdb_backup_engine_info_number_files(info, last))} / {Format.Bytes((long)native.rocksdb_backup_engine_info_size(info, last))}"),
                ]);
            }
            finally
            {
                native.rocksdb_backup_engine_info_destroy(info);
            }
        }
        finally
        {
            native.rocksdb_backup_engine_close(engine);
        }
    }

    /// <summary>Restores the latest backup of <paramref name="backupDirectory"/> into <paramref name="targetDirectory"/> with the backup engine.</summary>
    public static void RestoreLatestBackup(string backupDirectory, string targetDirectory)
    {
        var native = Native.Instance;
        var options = new DbOptions();
        var engine = native.rocksdb_backup_engine_open(options.Handle, backupDirectory, out var error);
        ThrowOnError(error);
        var restoreOptions = native.rocksdb_restore_options_create();
        try
        {
            native.rocksdb_backup_engine_restore_db_from_latest_backup(engine, targetDirectory, targetDirectory, restoreOptions, out error);
            ThrowOnError(error);
        }
        finally
        {
            native.rocksdb_restore_options_destroy(restoreOptions);
            native.rocksdb_backup_engine_close(engine);
            GC.KeepAlive(options);
        }
    }

    /// <summary>The last sequence number of the database in <paramref name="directory"/>, opened read-only.</summary>
    public static long LastSequenceNumber(string directory)
    {
        using var db = RocksDb.OpenReadOnly(new DbOptions(), directory, false);
        return (long)db.GetLatestSequenceNumber();
    }

    private static void ThrowOnError(IntPtr error)
    {
        if (error != IntPtr.Zero) throw new RocksDbException(error);
    }

    /// <summary>The SST files per level once the memtable was flushed at close.</summary>
    public IReadOnlyList<Figure> Counters() => _figuresAtClose;

    public void Dispose()
    {
        if (_disposed) return;
        _disposed = true;
        try
        {
            _db.Flush(new FlushOptions().SetWaitForFlush(true));
            _figuresAtClose = SstFigures();
        }
        finally
        {
            _batch.Dispose();
            _db.Dispose();
        }
    }

    private List<Figure> SstFigures()
    {
        var perLevel = Enumerable.Range(0, Levels)
            .Select(level => (Level: level, Files: long.Parse(_db.GetProperty($"rocksdb.num-files-at-level{level}"), CultureInfo.InvariantCulture)))
            .ToList();
        var bytes = long.Parse(_db.GetProperty("rocksdb.total-sst-files-size"), CultureInfo.InvariantCulture);
        return
        [
            new("SST files at close (count / bytes)", $"{Format.Count(perLevel.Sum(level => level.Files))} / {Format.Bytes(bytes)}"),
            new("SST files per level at close", string.Join(", ", perLevel.Where(level => level.Files > 0).Select(level => $"L{level.Level} {level.Files}"))),
        ];
    }
}
