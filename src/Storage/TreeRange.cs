namespace Storage;

/// <summary>One entry met while iterating; its spans are valid as long as the transaction's spans are.</summary>
public readonly ref struct TreeEntry
{
    internal TreeEntry(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        Key = key;
        Value = value;
    }

    /// <summary>The key.</summary>
    public ReadOnlySpan<byte> Key { get; }

    /// <summary>The value.</summary>
    public ReadOnlySpan<byte> Value { get; }
}

/// <summary>A range or prefix of a tree, for <c>foreach</c>, forwards or backwards.</summary>
public ref struct TreeRange
{
    private readonly TreeCursor _cursor;
    private readonly ReadOnlySpan<byte> _from;
    private readonly ReadOnlySpan<byte> _to;
    private readonly ReadOnlySpan<byte> _prefix;
    private readonly bool _reverse;
    private bool _started;

    internal TreeRange(TreeCursor cursor, ReadOnlySpan<byte> fromInclusive, ReadOnlySpan<byte> toExclusive, ReadOnlySpan<byte> prefix, bool reverse,
        bool started = false)
    {
        _cursor = cursor;
        _from = fromInclusive;
        _to = toExclusive;
        _prefix = prefix;
        _reverse = reverse;
        _started = started;
    }

    /// <summary>For <c>foreach</c>.</summary>
    public readonly TreeRange GetEnumerator() => this;

    /// <summary>The entry at the current position.</summary>
    public readonly TreeEntry Current => new(_cursor.Key, _cursor.Value);

    /// <summary>Advances; false at the end of the range.</summary>
    public bool MoveNext()
    {
        bool positioned;
        if (!_started)
        {
            _started = true;
            positioned = _reverse ? SeekEnd() : SeekStart();
        }
        else
        {
            positioned = _reverse ? _cursor.MovePrevious() : _cursor.MoveNext();
        }
        return positioned && InRange(_cursor.Key);
    }

    /// <summary>
    /// Copies the entries not yet enumerated (all of them, on a fresh range), up to <paramref name="limit"/>, into a list
    /// that outlives the transaction and may be used across <c>await</c>.
    /// </summary>
    /// <param name="limit">At most this many entries are copied.</param>
    public List<KeyValuePair<byte[], byte[]>> ToList(int limit = int.MaxValue)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(limit);
        var entries = new List<KeyValuePair<byte[], byte[]>>();
        while (entries.Count < limit && MoveNext()) entries.Add(new(_cursor.Key.ToArray(), _cursor.Value.ToArray()));
        return entries;
    }

    /// <summary>Counts the entries left in the range (consumes it).</summary>
    public int Count()
    {
        var count = 0;
        while (MoveNext()) count++;
        return count;
    }

    private readonly bool SeekStart()
    {
        if (!_prefix.IsEmpty) return _cursor.Seek(_prefix);
        return _from.IsEmpty ? _cursor.SeekFirst() : _cursor.Seek(_from);
    }

    private readonly bool SeekEnd()
    {
        if (!_prefix.IsEmpty)
        {
            // The last key with the prefix is the last key before the prefix's successor (the prefix
            // with trailing 0xFF bytes dropped and the last byte incremented); all-0xFF has none.
            var end = _prefix.TrimEnd((byte)0xFF);
            if (end.IsEmpty) return _cursor.SeekLast();
            // A prefix of any length may be asked for (one longer than a key matches nothing): only a short one goes on the stack.
            var successor = end.Length <= 256 ? stackalloc byte[256] : new byte[end.Length];
            successor = successor[..end.Length];
            end.CopyTo(successor);
            successor[^1]++;
            return SeekBefore(successor);
        }
        return _to.IsEmpty ? _cursor.SeekLast() : SeekBefore(_to);
    }

    private readonly bool SeekBefore(ReadOnlySpan<byte> bound)
    {
        if (!_cursor.SeekLastLessOrEqual(bound)) return false;
        return !_cursor.Key.SequenceEqual(bound) || _cursor.MovePrevious();
    }

    private readonly bool InRange(ReadOnlySpan<byte> key)
    {
        if (!_prefix.IsEmpty) return key.StartsWith(_prefix);
        if (!_from.IsEmpty && key.SequenceCompareTo(_from) < 0) return false;
        if (!_to.IsEmpty && key.SequenceCompareTo(_to) >= 0) return false;
        return true;
    }
}
