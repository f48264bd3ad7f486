using System.Runtime.InteropServices;

namespace Storage.Trees;

/// <summary>
/// The first bytes of a leaf node. The node is <c>[header][key][value]</c>, where value is the inline
/// value bytes, or (with <see cref="OverflowFlag"/>) the 8-byte first page number of an overflow run.
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = SizeBytes)]
internal struct LeafNodeHeader
{
    public const int SizeBytes = 4;

    /// <summary>Set in <see cref="ValueSizeOrFlags"/> when the value lives in an overflow run. The low bits are
    /// then zero: the run's own header holds the value size, so there is one place to keep right.</summary>
    public const ushort OverflowFlag = 0x8000;

    [FieldOffset(0)] public ushort KeySizeBytes;

    /// <summary>Inline: the value size in bytes (0 to <see cref="TreeLimits.MaxInlineValueSizeBytes"/>); or <see cref="OverflowFlag"/>.</summary>
    [FieldOffset(2)] public ushort ValueSizeOrFlags;

    public readonly bool IsOverflow => (ValueSizeOrFlags & OverflowFlag) != 0;
}
