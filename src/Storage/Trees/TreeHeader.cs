using System.Runtime.InteropServices;

namespace Storage.Trees;

/// <summary>A tree's persisted description: the value stored under its name in the root tree.</summary>
[StructLayout(LayoutKind.Explicit, Size = SizeBytes)]
internal struct TreeHeader
{
    public const int SizeBytes = 64;

    [FieldOffset(0)] public long RootPage;
    [FieldOffset(8)] public long Entries;
    [FieldOffset(16)] public long BranchPages;
    [FieldOffset(24)] public long LeafPages;
    [FieldOffset(32)] public long OverflowPages;
    [FieldOffset(40)] public int Depth;
    [FieldOffset(44)] public int TreeId;
    /// <summary>Root tree only: the highest tree id handed out so far.</summary>
    [FieldOffset(48)] public long LastTreeId;
    [FieldOffset(56)] public long Reserved2;
}
