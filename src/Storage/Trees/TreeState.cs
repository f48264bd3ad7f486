namespace Storage.Trees;

/// <summary>
/// The mutable description of one tree inside one transaction: where its root is and what it holds.
/// Persisted as a <see cref="TreeHeader"/> (trees) or in the file header / journal entry (the root tree of names).
/// </summary>
internal sealed class TreeState
{
    public int TreeId;
    public long RootPage;
    public long Entries;
    public int Depth;
    public long BranchPages;
    public long LeafPages;
    public long OverflowPages;

    /// <summary>Root tree only: the highest tree id handed out so far.</summary>
    public long LastTreeId;

    /// <summary>Changed in this transaction; the transaction persists it at commit.</summary>
    public bool IsDirty;

    /// <summary>Bumped on every structural or content change, so cursors know to re-seek.</summary>
    public long Version;

    public TreeHeader ToHeader() => new()
    {
        TreeId = TreeId,
        RootPage = RootPage,
        Entries = Entries,
        Depth = Depth,
        BranchPages = BranchPages,
        LeafPages = LeafPages,
        OverflowPages = OverflowPages,
        LastTreeId = LastTreeId,
    };

    public static TreeState FromHeader(in TreeHeader header) => new()
    {
        TreeId = header.TreeId,
        RootPage = header.RootPage,
        Entries = header.Entries,
        Depth = header.Depth,
        BranchPages = header.BranchPages,
        LeafPages = header.LeafPages,
        OverflowPages = header.OverflowPages,
        LastTreeId = header.LastTreeId,
    };

    public TreeState Clone() => (TreeState)MemberwiseClone();
}
