using System.Runtime.InteropServices;

namespace Storage.Trees;

/// <summary>
/// The first bytes of a branch node. The node is <c>[header][key]</c>: the child holds keys greater than or
/// equal to the key and less than the next node's key. The first node of a branch page has an empty key,
/// meaning "minus infinity" (the lower bound comes from the parent).
/// </summary>
/// <remarks>Packed: nodes sit at any byte offset, and are read with unaligned loads.</remarks>
[StructLayout(LayoutKind.Explicit, Pack = 1, Size = SizeBytes)]
internal struct BranchNodeHeader
{
    public const int SizeBytes = 10;

    [FieldOffset(0)] public ushort KeySizeBytes;
    [FieldOffset(2)] public long ChildPageNumber;
}
