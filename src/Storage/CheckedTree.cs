namespace Storage;

/// <summary>One tree as a consistency check walked it, next to what its header says (<see cref="CheckReport.Trees"/>).</summary>
public sealed class CheckedTree
{
    internal CheckedTree()
    {
    }

    /// <summary>The tree's name; null for the tree of tree names.</summary>
    public string? Name { get; internal init; }

    /// <summary>The tree's id (0 for the tree of tree names), which every page it owns carries.</summary>
    public int TreeId { get; internal init; }

    /// <summary>The root page its header names.</summary>
    public long RootPage { get; internal init; }

    /// <summary>Levels of pages, as its header says (1: the root is a leaf).</summary>
    public int Depth { get; internal init; }

    /// <summary>Entries, as its header says.</summary>
    public long HeaderEntries { get; internal init; }

    /// <summary>Entries found on its leaves.</summary>
    public long Entries { get; internal set; }

    /// <summary>Branch pages reached.</summary>
    public long BranchPages { get; internal set; }

    /// <summary>Leaf pages reached.</summary>
    public long LeafPages { get; internal set; }

    /// <summary>Pages of the overflow runs reached (every page of each run).</summary>
    public long OverflowPages { get; internal set; }

    /// <summary>Bytes that hold data: page headers, slots, nodes and overflow values.</summary>
    public long UsedBytes { get; internal set; }

    /// <summary>Bytes of the pages reached: <see cref="UsedBytes"/> over this is how full the tree's pages are.</summary>
    public long AllocatedBytes => (BranchPages + LeafPages + OverflowPages) * CheckReport.PageSizeBytes;

    /// <summary>The name, or <c>&lt;root&gt;</c> for the tree of tree names.</summary>
    public string DisplayName => Name ?? "<root>";
}
