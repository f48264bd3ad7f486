namespace Storage.Benchmarks.Engines;

/// <summary>A Storage read transaction on the one tree.</summary>
internal sealed class StorageEngineReader : IBatchedEngineReader
{
    private readonly ReadTransaction _transaction;
    private readonly Tree _tree;
    private readonly byte[] _valueCopy = new byte[4096];

    public StorageEngineReader(StorageEnvironment environment)
    {
        _transaction = environment.BeginRead();
        try
        {
            _tree = _transaction.OpenTree(StorageEngineInstance.TreeName);
        }
        catch
        {
            _transaction.Dispose();
            throw;
        }
    }

    public bool TryGet(ReadOnlySpan<byte> key, out int valueLength)
    {
        if (!_tree.TryGet(key, out var value))
        {
            valueLength = 0;
            return false;
        }
        value.CopyTo(_valueCopy);
        valueLength = value.Length;
        return true;
    }

    public long Scan()
    {
        var cursor = _tree.CreateCursor();
        long entries = 0;
        for (var ok = cursor.SeekFirst(); ok; ok = cursor.MoveNext())
        {
            cursor.Value.CopyTo(_valueCopy);
            entries++;
        }
        return entries;
    }

    public int GetMany(ReadOnlyMemory<byte>[] keys, int valueSizeBytes, out int wrongSizes)
    {
        var wrong = 0;
        var found = _tree.GetMany(keys, (value, _) =>
        {
            value.CopyTo(_valueCopy);
            if (value.Length != valueSizeBytes) wrong++;
        });
        wrongSizes = wrong;
        return found;
    }

    public void Dispose() => _transaction.Dispose();
}
