namespace Storage.Trees;

/// <summary>
/// The pages from the root to a leaf, and the child taken at each branch: how an insert finds the parents to
/// split into and how a cursor steps to the next leaf (pages keep no sibling links). Owned and reused by one
/// <see cref="BTree"/> or <see cref="BTreeCursor"/>, so that operations do not allocate.
/// </summary>
internal sealed class TreePath
{
    /// <summary>Page number at each level; level 0 is the root, <see cref="LeafLevel"/> the leaf.</summary>
    public readonly long[] Pages = new long[TreeNodeLayout.MaxTreeDepth];

    /// <summary>At a branch level, the index of the child taken.</summary>
    public readonly int[] Indices = new int[TreeNodeLayout.MaxTreeDepth];

    public int LeafLevel;
}
