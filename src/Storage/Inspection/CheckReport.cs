using Storage.State;

namespace Storage.Inspection;

/// <summary>What a page of the data file is, as the check found it.</summary>
internal enum PageKind : byte
{
    /// <summary>Neither reachable nor marked free (a leaked page), or not examined.</summary>
    Unknown = 0,
    FileHeader,
    /// <summary>Reserved page of a region other than region 0 (no content).</summary>
    Reserved,
    FreeSpaceBitmap,
    Branch,
    Leaf,
    /// <summary>The first page of an overflow run.</summary>
    Overflow,
    /// <summary>A following page of an overflow run (value bytes, no header).</summary>
    OverflowContinuation,
    Free,
}

/// <summary>One page as the check found it.</summary>
internal struct PageInfo
{
    public PageKind Kind;

    /// <summary>The owning tree (0 = root tree of names), -1 where there is none.</summary>
    public int TreeId;

    /// <summary>Nodes on a branch or leaf; pages of an overflow run on its first page.</summary>
    public int Items;

    /// <summary>Bytes in use (header, offsets and nodes; header and value for an overflow run's first page).</summary>
    public long UsedBytes;
}

/// <summary>One tree as walked, next to what its header says.</summary>
internal sealed class TreeReport
{
    /// <summary>Null for the root tree of names.</summary>
    public string? Name { get; init; }

    public int TreeId { get; init; }

    public long RootPage { get; init; }

    public int Depth { get; init; }

    public long HeaderEntries { get; init; }

    public long Entries { get; set; }

    public long BranchPages { get; set; }

    public long LeafPages { get; set; }

    public long OverflowPages { get; set; }

    /// <summary>Page headers, offsets, nodes, overflow values: the bytes that hold data.</summary>
    public long UsedBytes { get; set; }

    public long AllocatedBytes => (BranchPages + LeafPages + OverflowPages) * Paging.PageLayout.PageSizeBytes;

    public string DisplayName => Name ?? "<root>";
}

/// <summary>Free space of one section (<see cref="Allocation.FreeSpaceLayout.PagesPerSection"/> pages).</summary>
internal sealed record SectionReport(long Section, long FirstPage, long Pages, long FreePages, long LargestFreeRun);

/// <summary>The result of <see cref="EnvironmentChecker"/>.</summary>
internal sealed class CheckReport
{
    public List<InspectionProblem> Problems { get; } = [];

    public List<TreeReport> Trees { get; } = [];

    public List<SectionReport> Sections { get; } = [];

    public long TransactionId { get; set; }

    /// <summary>Pages below the next page number: the ones the check accounts for.</summary>
    public long PagesInUseOrFree { get; set; }

    public long FilePages { get; set; }

    public long ReachablePages { get; set; }

    public long ReservedPages { get; set; }

    public long FreePages { get; set; }

    public long LeakedPages { get; set; }

    /// <summary>Bytes of the data file whose blocks were given back to the file system (holes; Linux only, else 0).</summary>
    public long HoleBytes { get; set; }

    /// <summary>Problems left out of <see cref="Problems"/> once the cap was reached.</summary>
    public long ProblemsOmitted { get; set; }

    /// <summary>One entry per page below the next page number, when asked for.</summary>
    public PageInfo[]? Pages { get; set; }

    public int ErrorCount => Problems.Count(p => p.Severity == ProblemSeverity.Error) + (int)Math.Min(ProblemsOmitted, int.MaxValue);

    public bool IsConsistent => ErrorCount == 0;
}
