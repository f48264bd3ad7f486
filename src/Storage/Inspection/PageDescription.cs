namespace Storage.Inspection;

/// <summary>
/// One page of an <see cref="EnvironmentSnapshot"/> decoded as far as it safely can be
/// (<see cref="EnvironmentSnapshot.DescribePage"/>): its header, and by its type the nodes of a tree page, the size of an
/// overflow run, the count of a bitmap or the fields of a file header. What does not decode is in <see cref="Problems"/>.
/// </summary>
public sealed record PageDescription
{
    internal PageDescription()
    {
    }

    /// <summary>The page asked for.</summary>
    public long PageNumber { get; internal init; }

    /// <summary>Whether this version of the page was rebuilt from the journal (it is not in the data file yet).</summary>
    public bool IsFromJournal { get; internal init; }

    /// <summary>What the page is, as its header's type says; <see cref="PageKind.Unknown"/> for no type or more than one.</summary>
    public PageKind Kind { get; internal init; }

    /// <summary>The page number the header holds (a page that says it is another is damaged).</summary>
    public long StoredPageNumber { get; internal init; }

    /// <summary>The header's flags, by name.</summary>
    public string Flags { get; internal init; } = "";

    /// <summary>Branch and leaf pages: where the slot array ends.</summary>
    public int Lower { get; internal init; }

    /// <summary>Branch and leaf pages: where the node data starts.</summary>
    public int Upper { get; internal init; }

    /// <summary>Branch and leaf pages: how many leading bits every key of the page shares.</summary>
    public int KeyPrefixBits { get; internal init; }

    /// <summary>Overflow runs: the value's size (the field shares its place with <see cref="KeyPrefixBits"/>).</summary>
    public int OverflowSizeBytes { get; internal init; }

    /// <summary>Overflow runs: the pages the run takes, by <see cref="OverflowSizeBytes"/>.</summary>
    public long OverflowRunPages { get; internal init; }

    /// <summary>The tree that owns the page (0 is the tree of tree names).</summary>
    public int TreeId { get; internal init; }

    /// <summary>The transaction that last changed the page.</summary>
    public long TransactionId { get; internal init; }

    /// <summary>The checksum the header holds (an overflow run's covers the whole run).</summary>
    public uint StoredChecksum { get; internal init; }

    /// <summary>The checksum of this one page as read.</summary>
    public uint ComputedChecksum { get; internal init; }

    /// <summary>The bytes after the page header.</summary>
    public ReadOnlyMemory<byte> Payload { get; internal init; }

    /// <summary>Whether every byte of the page is zero (never written).</summary>
    public bool IsAllZeros { get; internal init; }

    /// <summary>Branch and leaf pages: the number of nodes, or null when the page is too damaged to open.</summary>
    public int? NodeCount { get; internal init; }

    /// <summary>Branch and leaf pages: bytes free between the slots and the nodes.</summary>
    public int FreeBytes { get; internal init; }

    /// <summary>Branch and leaf pages: the nodes, in slot order, up to the first that does not decode.</summary>
    public IReadOnlyList<PageNode> Nodes { get; internal init; } = [];

    /// <summary>Bitmap pages: the first page the bitmap covers.</summary>
    public long BitmapFirstPage { get; internal init; }

    /// <summary>Bitmap pages: how many pages it covers.</summary>
    public long BitmapPages { get; internal init; }

    /// <summary>Bitmap pages: how many of them it marks free.</summary>
    public long BitmapFreePages { get; internal init; }

    /// <summary>File header pages: the header, when it is valid.</summary>
    public DataFileHeader? FileHeader { get; internal init; }

    /// <summary>What is wrong with the page, in words: its number, its checksum, nodes that do not decode, an invalid file header.</summary>
    public IReadOnlyList<string> Problems { get; internal init; } = [];
}
