namespace Storage.Inspection;

/// <summary>One node of a branch or leaf page, as <see cref="EnvironmentSnapshot.DescribePage"/> decoded it.</summary>
/// <param name="Index">Its slot.</param>
/// <param name="OffsetBytes">Where in the page the node starts.</param>
/// <param name="SizeBytes">The node's size in the page (header, key and inline value).</param>
/// <param name="Key">The key (empty for the first node of a branch, which stands for minus infinity).</param>
/// <param name="Value">A leaf's inline value; empty for an overflow value and on a branch.</param>
/// <param name="OverflowPage">The first page of a leaf's overflow value; else null.</param>
/// <param name="ChildPage">A branch's child page; else null.</param>
public sealed record PageNode(int Index, int OffsetBytes, int SizeBytes, byte[] Key, byte[] Value, long? OverflowPage, long? ChildPage);
