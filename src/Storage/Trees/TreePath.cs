namespace Storage.Trees;

/// <summary>
/// The pages from the root to a leaf, and the child taken at each branch: how an insert finds the parents to
/// split into and how a cursor steps to the next leaf (pages keep no sibling links). Owned and reused by one
/// <see cref="BTree"/> or <see cref="BTreeCursor"/>, or shared by the trees of the write transactions (through
/// <see cref="TreeWorkspace"/>), so that operations do not allocate.
/// </summary>
internal sealed class TreePath
{
    /// <summary>Levels held before the arrays grow: a tree of 8 KiB pages reaches this depth only with billions of keys.</summary>
    private const int InitialLevels = 8;

    /// <summary>Page number at each level; level 0 is the root, <see cref="LeafLevel"/> the leaf.</summary>
    public long[] Pages = new long[InitialLevels];

    /// <summary>At a branch level, the index of the child taken.</summary>
    public int[] Indices = new int[InitialLevels];

    public int LeafLevel;

    /// <summary>Makes room for <paramref name="level"/> (descents call it before recording a level).</summary>
    public void EnsureLevel(int level)
    {
        if (level < Pages.Length) return;
        var levels = Math.Max(level + 1, Pages.Length * 2);
        Array.Resize(ref Pages, levels);
        Array.Resize(ref Indices, levels);
    }
}
