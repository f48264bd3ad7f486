namespace Storage;

/// <summary>One page of the data file as a consistency check found it (<see cref="CheckReport.Pages"/>).</summary>
/// <param name="Kind">What the page is.</param>
/// <param name="TreeId">The tree that owns it (0 is the tree of tree names), -1 for pages no tree owns (headers, bitmaps, free pages).</param>
/// <param name="Items">Nodes on a branch or leaf page; pages in the run on the first page of an overflow run; else 0.</param>
/// <param name="UsedBytes">Bytes that hold data: page header, slots and nodes; header and value for the first page of an overflow run.</param>
public readonly record struct CheckedPage(PageKind Kind, int TreeId, int Items, long UsedBytes);
