using Storage.Trees;

namespace Storage;

/// <summary>
/// Walks a tree in key order, both ways, across pages. In a write transaction it keeps its place
/// across changes to the tree (it re-seeks from its current key).
/// </summary>
public sealed class TreeCursor
{
    private readonly Tree _tree;
    private readonly BTreeCursor _cursor;

    internal TreeCursor(Tree tree, BTreeCursor cursor)
    {
        _tree = tree;
        _cursor = cursor;
    }

    /// <summary>Whether the cursor stands on an entry.</summary>
    public bool IsPositioned => _cursor.IsPositioned;

    /// <summary>The current key.</summary>
    public ReadOnlySpan<byte> Key
    {
        get
        {
            EnsurePositioned();
            return _cursor.Key;
        }
    }

    /// <summary>The current value.</summary>
    public ReadOnlySpan<byte> Value
    {
        get
        {
            EnsurePositioned();
            return _cursor.Value;
        }
    }

    /// <summary>Moves to the smallest key.</summary>
    public bool SeekFirst()
    {
        _tree.EnsureUsable();
        return _cursor.SeekFirst();
    }

    /// <summary>Moves to the largest key.</summary>
    public bool SeekLast()
    {
        _tree.EnsureUsable();
        return _cursor.SeekLast();
    }

    /// <summary>Moves to the first key &gt;= <paramref name="key"/>.</summary>
    public bool Seek(ReadOnlySpan<byte> key)
    {
        _tree.EnsureUsable();
        return _cursor.Seek(key);
    }

    /// <summary>Moves to the last key &lt;= <paramref name="key"/>.</summary>
    public bool SeekLastLessOrEqual(ReadOnlySpan<byte> key)
    {
        _tree.EnsureUsable();
        return _cursor.SeekLastLessOrEqual(key);
    }

    /// <summary>Moves to the next key; false (and unpositioned) past the last.</summary>
    public bool MoveNext()
    {
        _tree.EnsureUsable();
        return _cursor.MoveNext();
    }

    /// <summary>Moves to the previous key; false (and unpositioned) before the first.</summary>
    public bool MovePrevious()
    {
        _tree.EnsureUsable();
        return _cursor.MovePrevious();
    }

    private void EnsurePositioned()
    {
        _tree.EnsureUsable();
        if (!_cursor.IsPositioned) throw new InvalidOperationException("The cursor is not on an entry.");
    }
}
