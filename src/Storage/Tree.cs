using System.Buffers;
using Storage.Trees;

namespace Storage;

/// <summary>
/// A named B+Tree of byte keys (1 to 1,024 bytes, ordinal order) and byte values (0 bytes to 2 GiB − 1),
/// as one transaction sees it. Spans it returns point into the environment's pages: valid until the
/// transaction ends, and in a write transaction only until the next change made through it.
/// </summary>
public sealed class Tree
{
    private readonly Transaction _transaction;
    private bool _deleted;

    internal Tree(Transaction transaction, string name, TreeState state)
    {
        _transaction = transaction;
        Name = name;
        State = state;
        Btree = new BTree(transaction.Pages, state);
    }

    /// <summary>The tree's name.</summary>
    public string Name { get; }

    /// <summary>Number of keys.</summary>
    public long Count
    {
        get
        {
            EnsureUsable();
            return State.Entries;
        }
    }

    internal TreeState State { get; }

    internal BTree Btree { get; }

    /// <summary>Inserts or replaces the value of <paramref name="key"/>.</summary>
    /// <exception cref="ArgumentException">The key is empty or longer than 1,024 bytes; nothing was written.</exception>
    public void Put(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        EnsureWritable();
        ValidateKey(key);
        try
        {
            Btree.Put(key, value);
        }
        catch
        {
            _transaction.Fail();
            throw;
        }
    }

    /// <summary>Removes <paramref name="key"/>; returns whether it was there.</summary>
    public bool Delete(ReadOnlySpan<byte> key)
    {
        EnsureWritable();
        ValidateKey(key);
        try
        {
            return Btree.Delete(key);
        }
        catch
        {
            _transaction.Fail();
            throw;
        }
    }

    /// <summary>Finds the value of <paramref name="key"/> without copying it.</summary>
    public bool TryGet(ReadOnlySpan<byte> key, out ReadOnlySpan<byte> value)
    {
        EnsureUsable();
        ValidateKey(key);
        return Btree.TryGet(key, out value);
    }

    /// <summary>
    /// Looks many keys up as one batch: sorted, with the pages each level of the tree needs read together, so
    /// lookups whose pages are not in memory wait for the disk a few times per batch instead of once per key.
    /// </summary>
    /// <param name="keys">The keys, in any order; a key given twice is reported twice.</param>
    /// <param name="onFound">Called for each key present, in key order, with its value (no copy; valid until the
    /// transaction ends) and the key's index in <paramref name="keys"/>. It must not change the tree.</param>
    /// <returns>How many of the keys are present.</returns>
    /// <exception cref="ArgumentException">A key is empty or longer than 1,024 bytes; nothing was looked up.</exception>
    public int GetMany(ReadOnlySpan<ReadOnlyMemory<byte>> keys, ReadOnlySpanAction<byte, int> onFound)
    {
        EnsureUsable();
        foreach (var key in keys)
        {
            ValidateKey(key.Span);
        }
        return Btree.GetMany(keys, onFound, _transaction);
    }

    /// <summary>Copies of the values of <paramref name="keys"/> (null where a key is missing), in the keys' order; see the other overload.</summary>
    /// <exception cref="ArgumentException">A key is empty or longer than 1,024 bytes; nothing was looked up.</exception>
    public byte[]?[] GetMany(ReadOnlySpan<ReadOnlyMemory<byte>> keys)
    {
        var values = new byte[]?[keys.Length];
        GetMany(keys, (value, index) => values[index] = value.ToArray());
        return values;
    }

    /// <summary>A copy of the value of <paramref name="key"/>, or null.</summary>
    public byte[]? Get(ReadOnlySpan<byte> key) => TryGet(key, out var value) ? value.ToArray() : null;

    /// <summary>Whether <paramref name="key"/> is present.</summary>
    public bool Contains(ReadOnlySpan<byte> key) => TryGet(key, out _);

    /// <summary>A cursor over the tree, not positioned until a Seek.</summary>
    public TreeCursor CreateCursor()
    {
        EnsureUsable();
        return new TreeCursor(this, Btree.CreateCursor());
    }

    /// <summary>Entries with <paramref name="fromInclusive"/> &lt;= key &lt; <paramref name="toExclusive"/>; an empty bound is open.</summary>
    public TreeRange Range(ReadOnlySpan<byte> fromInclusive, ReadOnlySpan<byte> toExclusive, bool reverse = false) =>
        new(CreateCursor(), fromInclusive, toExclusive, prefix: default, reverse);

    /// <summary>Entries whose key starts with <paramref name="prefix"/>.</summary>
    public TreeRange Prefix(ReadOnlySpan<byte> prefix, bool reverse = false) =>
        new(CreateCursor(), default, default, prefix, reverse);

    /// <summary>
    /// The entries with <paramref name="fromInclusive"/> &lt;= key &lt; <paramref name="toExclusive"/> (an empty bound is
    /// open) as an enumerable of copies, for code that awaits between entries or uses LINQ. <see cref="Range"/> reads
    /// the same entries without copying, where the loop does not await.
    /// </summary>
    public IEnumerable<KeyValuePair<byte[], byte[]>> ReadRange(ReadOnlySpan<byte> fromInclusive, ReadOnlySpan<byte> toExclusive, bool reverse = false)
    {
        EnsureUsable();
        return new TreeEntries(this, fromInclusive.ToArray(), toExclusive.ToArray(), [], reverse);
    }

    /// <summary>
    /// The entries whose key starts with <paramref name="prefix"/> as an enumerable of copies (see <see cref="ReadRange"/>).
    /// </summary>
    public IEnumerable<KeyValuePair<byte[], byte[]>> ReadPrefix(ReadOnlySpan<byte> prefix, bool reverse = false)
    {
        EnsureUsable();
        return new TreeEntries(this, [], [], prefix.ToArray(), reverse);
    }

    /// <summary>
    /// Inserts or replaces the value of <paramref name="key"/> with <paramref name="length"/> bytes and returns them, to
    /// be filled in place (as LMDB's <c>MDB_RESERVE</c>): a serializer writes straight into the page, with no array in
    /// between. The bytes start zeroed. The span is valid until the next change in the transaction (which may move the
    /// value) and until it ends; what is in it when the transaction commits is what is committed.
    /// </summary>
    /// <exception cref="ArgumentException">The key is empty or longer than 1,024 bytes; nothing was written.</exception>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="length"/> is negative.</exception>
    public Span<byte> Reserve(ReadOnlySpan<byte> key, int length)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(length);
        EnsureWritable();
        ValidateKey(key);
        byte[]? rented = null;
        try
        {
            var zeros = length <= 1024 ? stackalloc byte[length] : (rented = System.Buffers.ArrayPool<byte>.Shared.Rent(length)).AsSpan(0, length);
            zeros.Clear();
            Btree.Put(key, zeros);
            if (!Btree.TryGet(key, out var value) || value.Length != length) throw new InvalidOperationException("The reserved value was not found after it was written.");
            // The transaction's own copy of the page (or overflow run): written by this transaction, so writable, and
            // its lines are marked written, so the commit journals what the caller puts there.
            return System.Runtime.InteropServices.MemoryMarshal.CreateSpan(ref System.Runtime.InteropServices.MemoryMarshal.GetReference(value), value.Length);
        }
        catch
        {
            _transaction.Fail();
            throw;
        }
        finally
        {
            if (rented is not null) System.Buffers.ArrayPool<byte>.Shared.Return(rented);
        }
    }

    /// <summary>The tree's shape.</summary>
    public TreeStats GetStats()
    {
        EnsureUsable();
        return new TreeStats
        {
            Name = Name,
            Entries = State.Entries,
            Depth = State.Depth,
            BranchPages = State.BranchPages,
            LeafPages = State.LeafPages,
            OverflowPages = State.OverflowPages,
        };
    }

    internal void MarkDeleted() => _deleted = true;

    internal void EnsureUsable()
    {
        _transaction.EnsureUsable();
        if (_deleted) throw new StorageException(StorageErrorCode.TreeNotFound, $"The tree '{Name}' was deleted in this transaction.");
    }

    private void EnsureWritable()
    {
        EnsureUsable();
        if (!_transaction.IsWritable) throw new InvalidOperationException("A read transaction cannot change a tree.");
    }

    private static void ValidateKey(ReadOnlySpan<byte> key)
    {
        if (key.Length < TreeLimits.MinKeySizeBytes || key.Length > TreeLimits.MaxKeySizeBytes)
        {
            ThrowKeySize(key.Length);
        }
    }

    private static void ThrowKeySize(int length) =>
        throw new ArgumentException($"Keys must be {TreeLimits.MinKeySizeBytes} to {TreeLimits.MaxKeySizeBytes} bytes; this one is {length}.", "key");
}
