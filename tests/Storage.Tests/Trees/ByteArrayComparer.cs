namespace Storage.Tests.Trees;

/// <summary>Ordinal (memcmp) order, the order the tree keeps its keys in.</summary>
internal sealed class ByteArrayComparer : IComparer<byte[]>
{
    public static readonly ByteArrayComparer Instance = new();

    public int Compare(byte[]? x, byte[]? y) => x.AsSpan().SequenceCompareTo(y);
}
