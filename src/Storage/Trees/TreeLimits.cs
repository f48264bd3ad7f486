using Storage.Paging;

namespace Storage.Trees;

/// <summary>Size limits of keys and values.</summary>
internal static class TreeLimits
{
    public const int MinKeySizeBytes = 1;
    public const int MaxKeySizeBytes = 1024;

    /// <summary>Values up to this size are stored in the leaf; larger ones in a contiguous overflow run.
    /// A quarter of a page, so that a leaf always holds at least two entries of maximum size.</summary>
    public const int MaxInlineValueSizeBytes = PageLayout.PageSizeBytes / 4;

    /// <summary>The largest value a span can hold.</summary>
    public const long MaxValueSizeBytes = int.MaxValue;
}
