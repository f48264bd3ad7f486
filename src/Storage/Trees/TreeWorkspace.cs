namespace Storage.Trees;

/// <summary>
/// The working arrays a tree needs to change pages (about 8 KiB). Write transactions run one at a time and their trees
/// change one at a time, so the environment keeps one set for all of them instead of one per tree per transaction.
/// </summary>
internal sealed class TreeWorkspace
{
    /// <summary>Separator keys on their way up to a parent during a split.</summary>
    public byte[] SeparatorBuffer { get; } = new byte[TreeLimits.MaxKeySizeBytes];

    /// <summary>Copies of a caller's key or value that point into the page about to change under them.</summary>
    public byte[] KeyScratch { get; } = new byte[TreeLimits.MaxKeySizeBytes];

    public byte[] ValueScratch { get; } = new byte[TreeLimits.MaxInlineValueSizeBytes];

    /// <summary>
    /// The path of the current operation, shared by all trees of the write transactions: one of their operations runs at a
    /// time, and none uses its path after the next begins (cursors keep their own).
    /// </summary>
    public TreePath Path { get; } = new();

    /// <summary>Whether a full leaf hands nodes to a sibling with room before it splits (<see cref="StorageOptions.FillSiblingsBeforeSplit"/>).</summary>
    public bool FillSiblingsBeforeSplit { get; set; } = true;

    /// <summary>Node sizes of a page being split (plus the node being inserted).</summary>
    public int[] SplitSizes { get; } = new int[TreeNodeLayout.MaxNodesPerSplit];
}
