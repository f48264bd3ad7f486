using System.Diagnostics.CodeAnalysis;
using Storage.Paging;

namespace Storage.Trees;

/// <summary>Cold throw paths of the tree code, kept out of the hot methods so that they stay small and inlinable.</summary>
internal static class TreeThrowHelper
{
    [DoesNotReturn]
    public static void ThrowWrongOwner(long pageNumber, int owner, int treeId) =>
        ThrowCorrupted(pageNumber, $"Page belongs to tree {owner}, but is reachable from tree {treeId}.");

    [DoesNotReturn]
    public static void ThrowCorrupted(long pageNumber, string message) =>
        throw new StorageCorruptedException(message, pageNumber: pageNumber);

    [DoesNotReturn]
    public static void ThrowPageNumberMismatch(long expectedPageNumber, long actualPageNumber) =>
        ThrowCorrupted(expectedPageNumber, $"Page says it is page {actualPageNumber}, expected page {expectedPageNumber}.");

    [DoesNotReturn]
    public static void ThrowUnexpectedPageType(long pageNumber, PageFlags flags, string expected) =>
        ThrowCorrupted(pageNumber, $"Page has flags {flags}, expected a {expected} page.");

    [DoesNotReturn]
    public static void ThrowBadPageBounds(long pageNumber, int lower, int upper) =>
        ThrowCorrupted(pageNumber, $"Tree page has Lower {lower} and Upper {upper}; they must satisfy " +
            $"{PageLayout.HeaderSizeBytes} <= Lower <= Upper <= {PageLayout.PageSizeBytes} with a whole number of {TreeNodeLayout.SlotSizeBytes}-byte slots.");

    [DoesNotReturn]
    public static void ThrowBadKeyPrefix(long pageNumber, int prefixBits) =>
        ThrowCorrupted(pageNumber, $"Tree page says its keys share {prefixBits} leading bits; no key is longer than {TreeLimits.MaxKeySizeBytes} bytes.");

    [DoesNotReturn]
    public static void ThrowKeyShorterThanPrefix(long pageNumber, int index, int keySizeBytes, int prefixBits) =>
        ThrowBadKeyHead(pageNumber, index, $"the key is {keySizeBytes} bytes, shorter than the page's shared prefix of {prefixBits} bits");

    [DoesNotReturn]
    public static void ThrowBadKeyHead(long pageNumber, int index, string problem) =>
        ThrowCorrupted(pageNumber, $"Node {index}: {problem}.");

    [DoesNotReturn]
    public static void ThrowBadNodeOffset(long pageNumber, int index, int offset, int upper) =>
        ThrowCorrupted(pageNumber, $"Node {index} is at offset {offset}, outside the node area [{upper}, {PageLayout.PageSizeBytes}).");

    [DoesNotReturn]
    public static void ThrowBadLeafNode(long pageNumber, int index, int offset, int keySizeBytes, ushort valueField) =>
        ThrowCorrupted(pageNumber, $"Leaf node {index} at offset {offset} has key size {keySizeBytes} and value field 0x{valueField:x4}.");

    [DoesNotReturn]
    public static void ThrowBadBranchNode(long pageNumber, int index, int offset, int keySizeBytes) =>
        ThrowCorrupted(pageNumber, $"Branch node {index} at offset {offset} has key size {keySizeBytes}.");

    [DoesNotReturn]
    public static void ThrowNodePastEndOfPage(long pageNumber, int index, int offset, int nodeSizeBytes) =>
        ThrowCorrupted(pageNumber, $"Node {index} at offset {offset} is {nodeSizeBytes} bytes long and runs past the end of the page.");

    [DoesNotReturn]
    public static void ThrowBadOverflowReference(long pageNumber, int index, int offset, long overflowPage) =>
        ThrowCorrupted(pageNumber, $"Leaf node {index} at offset {offset} refers to overflow page {overflowPage}, which cannot be a tree page.");

    [DoesNotReturn]
    public static void ThrowOverlappingNodes(long pageNumber, int nodeBytes, int nodeAreaBytes) =>
        ThrowCorrupted(pageNumber, $"Nodes take {nodeBytes} bytes, more than the {nodeAreaBytes} bytes of the node area: they overlap.");

    [DoesNotReturn]
    public static void ThrowBadChildPageNumber(long pageNumber, int index, long child) =>
        ThrowCorrupted(pageNumber, $"Branch node {index} points to page {child}, which cannot be a tree page.");

    [DoesNotReturn]
    public static void ThrowEmptyBranch(long pageNumber) =>
        ThrowCorrupted(pageNumber, "Branch page has no children.");

    [DoesNotReturn]
    public static void ThrowTooDeep(long pageNumber) =>
        ThrowCorrupted(pageNumber, $"Tree is deeper than {TreeNodeLayout.MaxTreeDepth} levels at this page: the branches form a cycle.");

    [DoesNotReturn]
    public static void ThrowUnbalanced(long pageNumber, int level, int depth) =>
        ThrowCorrupted(pageNumber, $"Page at level {level} does not match the tree depth {depth} (a leaf must be at level {depth - 1}).");

    [DoesNotReturn]
    public static void ThrowSiblingTypeMismatch(long leftPageNumber, long rightPageNumber) =>
        ThrowCorrupted(rightPageNumber, $"Sibling pages {leftPageNumber} and {rightPageNumber} under one parent are of different types.");

    [DoesNotReturn]
    public static void ThrowBadOverflow(long pageNumber, string what) =>
        ThrowCorrupted(pageNumber, $"Overflow run: {what}.");

    [DoesNotReturn]
    public static void ThrowNodeIndexOutOfRange(long pageNumber, int index, int count) =>
        throw new InvalidOperationException($"Tree page {pageNumber}: node index {index} is outside [0, {count}) (a bug in the caller).");

    [DoesNotReturn]
    public static void ThrowNodeDoesNotFit(long pageNumber, int nodeSizeBytes, int freeBytes) =>
        throw new InvalidOperationException($"Tree page {pageNumber}: a {nodeSizeBytes}-byte node does not fit in {freeBytes} free bytes (a bug in the caller).");

    [DoesNotReturn]
    public static void ThrowNoSplitPoint(long pageNumber) =>
        throw new InvalidOperationException($"Tree page {pageNumber}: no split point leaves both halves within a page (a bug in the size limits).");

    [DoesNotReturn]
    public static void ThrowKeySizeOutOfRange(int keySizeBytes) =>
        throw new ArgumentException(
            $"A key is {TreeLimits.MinKeySizeBytes} to {TreeLimits.MaxKeySizeBytes} bytes long; this one is {keySizeBytes} bytes.", "key");

    [DoesNotReturn]
    public static void ThrowCursorNotPositioned() =>
        throw new InvalidOperationException("The cursor is not positioned on an entry.");

    [DoesNotReturn]
    public static void ThrowCursorEntryDeleted() =>
        throw new InvalidOperationException("The entry under the cursor was deleted; move the cursor first.");
}
