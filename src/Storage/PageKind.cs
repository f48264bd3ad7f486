namespace Storage;

/// <summary>What a page of the data file is: as a consistency check found it (<see cref="CheckedPage"/>), or as its header says (<see cref="Inspection.PageDescription"/>).</summary>
public enum PageKind : byte
{
    /// <summary>Neither reachable nor marked free (a leaked page), not examined, or a header with no known type.</summary>
    Unknown = 0,

    /// <summary>One of the two alternating file headers (pages 0 and 1).</summary>
    FileHeader,

    /// <summary>One of the two reserved pages at the start of a region after the first (no content).</summary>
    Reserved,

    /// <summary>A free-space bitmap page: one bit per page, set when the page is free.</summary>
    FreeSpaceBitmap,

    /// <summary>A branch page of a tree: separator keys and child page numbers.</summary>
    Branch,

    /// <summary>A leaf page of a tree: keys and values, or references to overflow runs.</summary>
    Leaf,

    /// <summary>The first page of an overflow run (a large value): a page header, then the value's first bytes.</summary>
    Overflow,

    /// <summary>A following page of an overflow run: value bytes only, no header.</summary>
    OverflowContinuation,

    /// <summary>Marked free in the free-space bitmap and not reachable.</summary>
    Free,
}
