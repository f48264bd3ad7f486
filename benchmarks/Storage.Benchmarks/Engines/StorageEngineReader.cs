namespace Storage.Benchmarks.Engines;

/// <summary>A Storage read transaction on the one tree.</summary>
internal sealed class StorageEngineReader : IEngineReader
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

    public void Dispose() => _transaction.Dispose();
}
