namespace Storage.Paging;

/// <summary>What a page holds. Exactly one of the type flags is set on a valid page.</summary>
[Flags]
internal enum PageFlags : ushort
{
    None = 0,
    Leaf = 1,
    Branch = 2,
    Overflow = 4,
    FreeSpaceBitmap = 8,
    FileHeader = 16,

    TypeMask = Leaf | Branch | Overflow | FreeSpaceBitmap | FileHeader,
}
