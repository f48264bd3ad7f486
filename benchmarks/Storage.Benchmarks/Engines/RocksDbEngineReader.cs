using RocksDbSharp;

namespace Storage.Benchmarks.Engines;

/// <summary>
/// A RocksDB snapshot and the read options that read at it. Gets go through the C API's pinnable slice, so the
/// value is copied once, from RocksDB's block (or memtable) into the reader's buffer, with nothing allocated on
/// the managed heap; RocksDbSharp's own span getters go through <c>rocksdb_get</c>, which mallocs a copy first.
/// </summary>
internal sealed unsafe class RocksDbEngineReader : IBatchedEngineReader
{
    private readonly RocksDb _db;
    private readonly ColumnFamilyHandle _family;
    private readonly Snapshot _snapshot;
    private readonly ReadOptions _readOptions;
    private readonly byte[] _valueCopy = new byte[4096];
    private bool _disposed;

    public RocksDbEngineReader(RocksDb db, ColumnFamilyHandle family)
    {
        _db = db;
        _family = family;
        _snapshot = db.CreateSnapshot();
        _readOptions = new ReadOptions().SetSnapshot(_snapshot);
    }

    public bool TryGet(ReadOnlySpan<byte> key, out int valueLength)
    {
        nint slice;
        nint error;
        fixed (byte* keyBytes = key)
        {
            slice = Native.Instance.rocksdb_get_pinned(_db.Handle, _readOptions.Handle, keyBytes, (nuint)key.Length, out error);
        }
        if (error != 0) throw new RocksDbException(error);
        if (slice == 0)
        {
            valueLength = 0;
            return false;
        }
        valueLength = CopyOut(slice);
        return true;
    }

    public long Scan()
    {
        using var iterator = _db.NewIterator(readOptions: _readOptions);
        long entries = 0;
        for (iterator.SeekToFirst(); iterator.Valid(); iterator.Next())
        {
            iterator.GetValueSpan().CopyTo(_valueCopy);
            entries++;
        }
        // Valid() is false at the end and on an error; this throws on the latter.
        Native.Instance.rocksdb_iter_get_error(iterator.Handle);
        return entries;
    }

    /// <summary>
    /// RocksDB's batched MultiGet (<c>rocksdb_batched_multi_get_cf</c>), which sorts the keys and reads the blocks
    /// they need together, each value returned as a pinnable slice.
    /// </summary>
    public int GetMany(ReadOnlyMemory<byte>[] keys, int valueSizeBytes, out int wrongSizes)
    {
        var count = keys.Length;
        var keyBytes = new byte[keys.Sum(key => key.Length)];
        var keyPointers = new nint[count];
        var keySizes = new nuint[count];
        var slices = new nint[count];
        var errors = new nint[count];
        fixed (byte* keyBase = keyBytes)
        fixed (nint* sliceBase = slices)
        {
            var offset = 0;
            for (var i = 0; i < count; i++)
            {
                keys[i].Span.CopyTo(keyBytes.AsSpan(offset));
                keyPointers[i] = (nint)(keyBase + offset);
                keySizes[i] = (nuint)keys[i].Length;
                offset += keys[i].Length;
            }
            Native.Instance.rocksdb_batched_multi_get_cf(_db.Handle, _readOptions.Handle, _family.Handle, (nuint)count,
                keyPointers, keySizes, (nint)sliceBase, errors, sorted_input: 0);
        }

        var found = 0;
        var wrong = 0;
        RocksDbException? failure = null;
        for (var i = 0; i < count; i++)
        {
            if (errors[i] != 0)
            {
                // The exception takes the message and frees it; later errors are only freed.
                if (failure is null) failure = new RocksDbException(errors[i]);
                else Native.Instance.rocksdb_free(errors[i]);
            }
            if (slices[i] == 0) continue;
            if (CopyOut(slices[i]) != valueSizeBytes) wrong++;
            found++;
        }
        if (failure is not null) throw failure;
        wrongSizes = wrong;
        return found;
    }

    /// <summary>Copies the slice's value into the reader's buffer, frees the slice, and returns the value's length.</summary>
    private int CopyOut(nint slice)
    {
        try
        {
            var data = Native.Instance.rocksdb_pinnableslice_value(slice, out var length);
            var value = new ReadOnlySpan<byte>((void*)data, checked((int)length));
            value.CopyTo(_valueCopy);
            return value.Length;
        }
        finally
        {
            Native.Instance.rocksdb_pinnableslice_destroy(slice);
        }
    }

    public void Dispose()
    {
        if (_disposed) return;
        _disposed = true;
        _snapshot.Dispose();
    }
}
