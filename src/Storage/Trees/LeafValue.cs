namespace Storage.Trees;

/// <summary>What a leaf node holds for its value: the inline bytes, or the first page of an overflow run.</summary>
internal readonly ref struct LeafValue
{
    public LeafValue(ReadOnlySpan<byte> inline)
    {
        Inline = inline;
        OverflowPage = TreeNodeLayout.NoOverflowPage;
    }

    public LeafValue(long overflowPage)
    {
        Inline = default;
        OverflowPage = overflowPage;
    }

    /// <summary>The value's bytes inside the page; empty for an overflow value.</summary>
    public ReadOnlySpan<byte> Inline { get; }

    /// <summary>The first page of the overflow run, or <see cref="TreeNodeLayout.NoOverflowPage"/>.</summary>
    public long OverflowPage { get; }

    public bool IsOverflow => OverflowPage != TreeNodeLayout.NoOverflowPage;
}
