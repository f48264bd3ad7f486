using Storage.Allocation;
using Storage.Trees;

namespace Storage.State;

/// <summary>
/// What a committed state (a file header, or a journal entry) may say, checked before anything is sized or read
/// from it: a header or entry with a valid checksum can still be wrong (a bug, a bad copy, a hostile file), and a
/// next page number of 2^40 must not become a terabyte file or array.
/// </summary>
internal static class StateChecks
{
    /// <summary>8 PiB of pages: far beyond any data file, small enough that page arithmetic never overflows.</summary>
    public const long MaxPageCount = 1L << 40;

    /// <summary>Why <paramref name="nextPageNumber"/> and <paramref name="root"/> cannot describe an environment, or null.</summary>
    public static string? Problem(long nextPageNumber, in TreeHeader root)
    {
        if (nextPageNumber < FreeSpaceLayout.FirstUsablePage(0) + 1 || nextPageNumber >= MaxPageCount) return $"next page number {nextPageNumber} is out of range";
        if (root.RootPage < TreeNodeLayout.FirstTreePageNumber || root.RootPage >= nextPageNumber || FreeSpaceLayout.IsReserved(root.RootPage))
        {
            return $"the root page {root.RootPage} of the tree of names is not a tree page below the next page number {nextPageNumber}";
        }
        if (root.Depth < 1 || root.Depth > TreeNodeLayout.MaxTreeDepth) return $"the tree of names has depth {root.Depth}";
        if (root.LastTreeId < 0 || root.LastTreeId >= int.MaxValue) return $"the last tree id {root.LastTreeId} is out of range";
        if (root.Entries < 0 || root.BranchPages < 0 || root.LeafPages < 0 || root.OverflowPages < 0) return "the tree of names has negative counts";
        return null;
    }

    /// <summary>Why a file header cannot describe an environment (its state, or a negative journal position), or null.</summary>
    public static string? Problem(in FileHeader header) =>
        Problem(header.NextPageNumber, header.RootTree)
        ?? (header.JournalFileNumber < 0 || header.JournalOffsetBytes < 0 ? "negative journal position" : null);

    /// <summary>
    /// How far one transaction can move the next page number: every page it took from the end of the file is in its
    /// entry as a record, or (allocated and freed again within it, or skipped to start a new region) marked free in a
    /// bitmap diff it carries, at most eight pages per byte; a new region adds its reserved pages.
    /// </summary>
    public static long MaxGrowthPages(long uncompressedPayloadBytes) =>
        8 * uncompressedPayloadBytes + 2 * FreeSpaceLayout.ReservedPagesPerRegion;
}
