using Storage.Paging;

namespace Storage.Trees;

/// <summary>
/// Called by <see cref="BTree.VisitPages"/> once per page or overflow run of a tree, parents before children and
/// children in key order.
/// </summary>
/// <param name="pageNumber">The page, or the first page of an overflow run.</param>
/// <param name="type"><see cref="PageFlags.Branch"/>, <see cref="PageFlags.Leaf"/> or <see cref="PageFlags.Overflow"/>.</param>
/// <param name="level">0 for the root, growing downwards; an overflow run has the level of the leaf that refers to it.</param>
/// <param name="count">Nodes on a branch or leaf page; pages in an overflow run.</param>
internal delegate void TreePageVisitor(long pageNumber, PageFlags type, int level, int count);
