using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using Storage.Allocation;
using Storage.Paging;
using Storage.Platform;
using Storage.Trees;

namespace Storage.Inspection;

/// <summary>
/// The full consistency check of one committed state, read through an <see cref="ICheckSource"/>: a snapshot of a
/// directory on disk or a read transaction of an open environment. Unlike <see cref="BTree.Validate"/>, which stops at the
/// first broken invariant, it reports every problem it finds (up to <see cref="CheckReport.MaxProblems"/>) with page, tree
/// and byte offset, and goes on with the rest of the file.
/// </summary>
/// <remarks>
/// Checks: every page below the next page number reachable exactly once (from the root tree of names or a named tree),
/// or a reserved page, or marked free in the bitmaps, and never two of those; page numbers, types, owning tree,
/// checksums and writing transactions (pages rebuilt from the journal or held in the page table included); slotted-page
/// bounds and nodes; key order within pages and against the parents' separators; equal leaf depths; branch shape;
/// overflow runs (header, size, bounds, checksum over the run); each tree's counters against its header; holes in the
/// data file under pages in use. Memory: three bits per page ("seen", "free", "inside a run"), a page buffer per tree
/// level, and optionally one <see cref="CheckedPage"/> per page.
/// </remarks>
internal sealed unsafe partial class EnvironmentChecker
{
    private const int PageSize = PageLayout.PageSizeBytes;

    /// <summary>Progress is reported once per this many pages accounted for.</summary>
    private const int ProgressIntervalPages = 4096;

    private readonly ICheckSource _source;
    private readonly CheckReport _report = new();
    private readonly byte[][] _levels = new byte[TreeNodeLayout.MaxTreeDepth + 1][];
    private readonly byte[] _runPage = new byte[PageSize];
    private readonly IProgress<CheckProgress>? _progress;
    private ulong[] _seen = [];

    /// <summary>Pages after the first of an overflow run (whose version is the run's).</summary>
    private ulong[] _continuation = [];
    private long _claimed;
    private long _nextPage;

    private EnvironmentChecker(ICheckSource source, bool collectPages, IProgress<CheckProgress>? progress)
    {
        _source = source;
        _progress = progress;
        _nextPage = source.NextPageNumber;
        // The per-page arrays are sized by the next page number, which a damaged header or entry can put anywhere: no
        // further than the file, what the journal rebuilt past it, and one region's slack (a new region starts after
        // its reserved pages) is checked.
        var limit = Math.Max(source.FilePageCount, source.PagesEndOutsideFile) + FreeSpaceLayout.PagesPerRegion;
        if (_nextPage > limit)
        {
            Error("next-page", $"the state says {_nextPage} pages are in use, but the file holds {source.FilePageCount} and the journal reaches page {source.PagesEndOutsideFile}; only the first {limit} are checked");
            _nextPage = limit;
        }
        if (collectPages) _report.Pages = new CheckedPage[_nextPage];
    }

    /// <summary>Checks the state <paramref name="source"/> reads.</summary>
    /// <param name="source">The state to check.</param>
    /// <param name="collectPages">Whether to fill <see cref="CheckReport.Pages"/>.</param>
    /// <param name="progress">Told now and then how many pages were accounted for.</param>
    public static CheckReport Check(ICheckSource source, bool collectPages, IProgress<CheckProgress>? progress)
    {
        ArgumentNullException.ThrowIfNull(source);
        return new EnvironmentChecker(source, collectPages, progress).Run();
    }

    private CheckReport Run()
    {
        foreach (var problem in _source.Problems) _report.Add(problem);
        _report.TransactionId = _source.TransactionId;
        _report.PagesInUseOrFree = _nextPage;
        _report.FilePages = _source.FilePageCount;
        _seen = new ulong[(_nextPage + 63) / 64];
        _continuation = new ulong[_seen.Length];
        var free = new ulong[_seen.Length];

        var bitmapsOk = CheckReservedPages(free);
        var rootHeader = _source.RootTree;
        var root = new CheckedTree { Name = null, TreeId = 0, RootPage = rootHeader.RootPage, Depth = rootHeader.Depth, HeaderEntries = rootHeader.Entries };
        _report.Add(root);
        var named = new List<(string Name, TreeHeader Header)>();
        WalkTree(root, rootHeader, named);
        CheckTreeIds(named, rootHeader.LastTreeId);
        foreach (var (name, header) in named)
        {
            var tree = new CheckedTree { Name = name, TreeId = header.TreeId, RootPage = header.RootPage, Depth = header.Depth, HeaderEntries = header.Entries };
            _report.Add(tree);
            WalkTree(tree, header, null);
        }
        CompareFreeSpace(free, bitmapsOk);
        CheckHoles();
        _progress?.Report(new CheckProgress(_nextPage, _nextPage));
        return _report;
    }

    private void Error(string kind, string message, long page = -1, CheckedTree? tree = null, long offsetInPage = -1)
    {
        var offset = page >= 0 ? page * PageSize + Math.Max(0, offsetInPage) : -1;
        _report.Add(new CheckProblem(ProblemSeverity.Error, kind, message, _source.DataPath, page, tree?.DisplayName, offset));
    }

    /// <summary>Marks a page seen; false when it was seen before.</summary>
    private bool Claim(long page)
    {
        ref var word = ref _seen[page >> 6];
        var mask = 1UL << (int)(page & 63);
        if ((word & mask) != 0) return false;
        word |= mask;
        if (++_claimed % ProgressIntervalPages == 0) _progress?.Report(new CheckProgress(_claimed, _nextPage));
        return true;
    }

    private bool IsSeen(long page) => (_seen[page >> 6] & (1UL << (int)(page & 63))) != 0;

    private void SetInfo(long page, PageKind kind, int treeId, int items, long usedBytes)
    {
        if (_report.Pages is { } pages && page >= 0 && page < pages.Length) pages[page] = new CheckedPage(kind, treeId, items, usedBytes);
    }

    /// <summary>
    /// Verifies the stored checksum of a page or run (pages rebuilt from the journal carry the checksum their
    /// transaction stamped, like data-file pages), and that no transaction after the snapshot's wrote it.
    /// </summary>
    private bool CheckChecksum(byte* first, long firstPage, int pageCount, CheckedTree? tree)
    {
        var writtenBy = ((PageHeader*)first)->TransactionId;
        if (writtenBy > _source.TransactionId)
        {
            Error("future", $"page was written by transaction {writtenBy}, after the state checked (transaction {_source.TransactionId}): the data file holds a change the journal no longer has (or the environment was written to while it was checked)", firstPage, tree, 14);
        }
        var stored = ((PageHeader*)first)->Checksum;
        uint computed;
        if (pageCount == 1)
        {
            computed = Crc32C.ComputePage(first, PageSize);
        }
        else
        {
            var state = Crc32C.Append(Crc32C.Start(0), first, PageHeader.ChecksumOffset);
            var rest = PageHeader.ChecksumOffset + PageHeader.ChecksumSizeBytes;
            state = Crc32C.Append(state, first + rest, PageSize - rest);
            var buffer = new byte[PageSize];
            for (var index = 1; index < pageCount; index++)
            {
                if (!_source.TryReadRunPage(firstPage, index, buffer, out var problem))
                {
                    Error("overflow", $"overflow run page cannot be read: {problem}", firstPage + index, tree);
                    return false;
                }
                state = Crc32C.Append(state, buffer);
            }
            computed = Crc32C.Finish(state);
        }
        if (stored != computed)
        {
            var what = pageCount == 1 ? "page" : $"overflow run of {pageCount} pages";
            Error("checksum", $"{what} checksum mismatch (stored {stored:x8}, computed {computed:x8})", firstPage, tree, PageHeader.ChecksumOffset);
            return false;
        }
        return true;
    }

    private void WalkTree(CheckedTree tree, in TreeHeader header, List<(string, TreeHeader)>? named)
    {
        if (header.Depth < 1 || header.Depth > TreeNodeLayout.MaxTreeDepth)
        {
            Error("tree-header", $"the tree header says depth {header.Depth}", header.RootPage, tree);
        }
        else
        {
            WalkPage(tree, header.RootPage, 0, header.Depth, default, false, default, false, named, -1);
        }
        if (tree.Entries != header.Entries) Error("count", $"the tree has {tree.Entries} entries, its header says {header.Entries}", header.RootPage, tree);
        if (tree.BranchPages != header.BranchPages) Error("count", $"the tree has {tree.BranchPages} branch pages, its header says {header.BranchPages}", header.RootPage, tree);
        if (tree.LeafPages != header.LeafPages) Error("count", $"the tree has {tree.LeafPages} leaf pages, its header says {header.LeafPages}", header.RootPage, tree);
        if (tree.OverflowPages != header.OverflowPages) Error("count", $"the tree has {tree.OverflowPages} overflow pages, its header says {header.OverflowPages}", header.RootPage, tree);
    }

    /// <summary>A page a tree refers to must lie between the reserved pages and the next page number.</summary>
    private bool CheckReference(long page, CheckedTree tree, long fromPage, string what)
    {
        if (page < TreeNodeLayout.FirstTreePageNumber || page >= _nextPage)
        {
            Error("reference", $"{what} refers to page {page}, outside [{TreeNodeLayout.FirstTreePageNumber}, {_nextPage})", fromPage >= 0 ? fromPage : page, tree);
            return false;
        }
        if (FreeSpaceLayout.IsReserved(page))
        {
            Error("reference", $"{what} refers to page {page}, a reserved (header or bitmap) page", fromPage >= 0 ? fromPage : page, tree);
            return false;
        }
        return true;
    }

    private void WalkPage(CheckedTree tree, long pageNumber, int level, int depth, ReadOnlySpan<byte> lower, bool hasLower,
        ReadOnlySpan<byte> upper, bool hasUpper, List<(string, TreeHeader)>? named, long parent)
    {
        if (level >= TreeNodeLayout.MaxTreeDepth)
        {
            Error("depth", $"descent passed {TreeNodeLayout.MaxTreeDepth} levels (a cycle)", pageNumber, tree);
            return;
        }
        if (!CheckReference(pageNumber, tree, parent, parent >= 0 ? $"branch page {parent}" : "the tree header")) return;
        if (!Claim(pageNumber))
        {
            Error("duplicate", "page is reachable more than once (a cycle, a page shared between trees, or overlapping overflow runs)", pageNumber, tree);
            return;
        }
        _report.ReachablePages++;
        var buffer = _levels[level] ??= new byte[PageSize];
        if (!_source.TryReadPage(pageNumber, buffer, out var readProblem))
        {
            Error("read", readProblem!, pageNumber, tree);
            return;
        }
        fixed (byte* p = buffer)
        {
            var header = (PageHeader*)p;
            if (header->PageNumber != pageNumber)
            {
                Error("page-number", $"page says it is page {header->PageNumber}", pageNumber, tree, 0);
                return;
            }
            CheckChecksum(p, pageNumber, 1, tree);
            var type = header->Flags & PageFlags.TypeMask;
            if (type != PageFlags.Leaf && type != PageFlags.Branch)
            {
                Error("page-type", $"page has flags {header->Flags}, expected a leaf or branch page", pageNumber, tree, 8);
                return;
            }
            if (header->TreeId != tree.TreeId)
            {
                Error("owner", $"page belongs to tree id {header->TreeId}, but is reachable from tree id {tree.TreeId}", pageNumber, tree, 24);
            }
            var isLeaf = type == PageFlags.Leaf;
            if (isLeaf ? level != depth - 1 : level >= depth - 1)
            {
                Error("depth", $"{(isLeaf ? "leaf" : "branch")} at level {level}, but the tree's depth is {depth} (leaves must all be at level {depth - 1})", pageNumber, tree);
                if (!isLeaf) return;
            }
            var node = -1;
            try
            {
                var page = TreePage.Open(p, pageNumber);
                var count = page.Count;
                long used = PageLayout.HeaderSizeBytes + page.ComputeUsedBytes();
                page.CheckKeyHeads();
                tree.UsedBytes += used;
                SetInfo(pageNumber, isLeaf ? PageKind.Leaf : PageKind.Branch, header->TreeId, count, used);
                if (isLeaf)
                {
                    tree.LeafPages++;
                    tree.Entries += count;
                    if (count == 0 && level > 0) Error("shape", "a leaf other than the root is empty", pageNumber, tree);
                    for (node = 0; node < count; node++)
                    {
                        var key = page.GetKey(node);
                        CheckKeyInRange(tree, p, pageNumber, node, key, node > 0 ? page.GetKey(node - 1) : lower, node > 0 || hasLower, node > 0, upper, hasUpper);
                        var value = page.GetValue(node);
                        if (value.IsOverflow) CheckOverflow(tree, value.OverflowPage, pageNumber, node);
                        if (named is not null) AddNamedTree(tree, pageNumber, node, key, value, named);
                    }
                    return;
                }

                tree.BranchPages++;
                if (count < (level == 0 ? 2 : 1))
                {
                    Error("shape", $"{(level == 0 ? "root " : "")}branch has {count} children", pageNumber, tree);
                    if (count == 0) return;
                }
                node = 0;
                if (page.GetKey(0).Length != 0) Error("shape", "the first node of a branch has a key; it must be empty (minus infinity)", pageNumber, tree, NodeOffset(p, 0));
                for (node = 1; node < count; node++)
                {
                    var key = page.GetKey(node);
                    if (key.IsEmpty) Error("shape", $"branch node {node} has an empty key; only node 0 may", pageNumber, tree, NodeOffset(p, node));
                    CheckKeyInRange(tree, p, pageNumber, node, key, node > 1 ? page.GetKey(node - 1) : lower, node > 1 || hasLower, node > 1, upper, hasUpper);
                }
                for (node = 0; node < count; node++)
                {
                    long child = Unsafe.ReadUnaligned<BranchNodeHeader>(p + NodeOffset(p, node)).ChildPageNumber;
                    var childHasLower = node > 0 || hasLower;
                    var childLower = node > 0 ? page.GetKey(node) : lower;
                    var childHasUpper = node + 1 < count || hasUpper;
                    var childUpper = node + 1 < count ? page.GetKey(node + 1) : upper;
                    WalkPage(tree, child, level + 1, depth, childLower, childHasLower, childUpper, childHasUpper, named, pageNumber);
                }
            }
            catch (StorageCorruptedException e)
            {
                var where = node >= 0 ? NodeOffsetOrZero(p, node) : 0;
                Error("node", StripLocation(e.Message), pageNumber, tree, where);
            }
        }
    }

    /// <summary>The engine's exception messages end in "[page N]"; the problem carries the location itself.</summary>
    private static string StripLocation(string message)
    {
        var at = message.LastIndexOf(" [", StringComparison.Ordinal);
        return at > 0 && message.EndsWith(']') ? message[..at] : message;
    }

    private static int NodeOffset(byte* page, int index) =>
        TreeNodeLayout.NodeOffset(page, index);

    private static int NodeOffsetOrZero(byte* page, int index)
    {
        var lowerBound = ((PageHeader*)page)->Lower;
        var slot = PageLayout.HeaderSizeBytes + index * TreeNodeLayout.SlotSizeBytes;
        return slot + TreeNodeLayout.SlotSizeBytes <= Math.Min((int)lowerBound, PageSize) ? NodeOffset(page, index) % PageSize : 0;
    }

    private void CheckKeyInRange(CheckedTree tree, byte* p, long pageNumber, int index, ReadOnlySpan<byte> key, ReadOnlySpan<byte> lower, bool hasLower,
        bool lowerIsExclusive, ReadOnlySpan<byte> upper, bool hasUpper)
    {
        if (hasLower)
        {
            var comparison = key.SequenceCompareTo(lower);
            if (comparison < 0 || (comparison == 0 && lowerIsExclusive))
            {
                Error("key-order", $"key {index} ({Hex.Preview(key)}) is not above {(lowerIsExclusive ? "the key before it" : "the parent's separator")} ({Hex.Preview(lower)})",
                    pageNumber, tree, NodeOffset(p, index));
            }
        }
        if (hasUpper && key.SequenceCompareTo(upper) >= 0)
        {
            Error("key-order", $"key {index} ({Hex.Preview(key)}) is not below the parent's next separator ({Hex.Preview(upper)})", pageNumber, tree, NodeOffset(p, index));
        }
    }

    private void AddNamedTree(CheckedTree root, long pageNumber, int node, ReadOnlySpan<byte> key, LeafValue value, List<(string, TreeHeader)> named)
    {
        if (value.IsOverflow || value.Inline.Length != TreeHeader.SizeBytes)
        {
            Error("tree-header", $"root tree entry {Hex.Preview(key)} holds {(value.IsOverflow ? "an overflow value" : $"{value.Inline.Length} bytes")}, not a {TreeHeader.SizeBytes}-byte tree header", pageNumber, root);
            return;
        }
        string name;
        try
        {
            name = new UTF8Encoding(false, true).GetString(key);
        }
        catch (DecoderFallbackException)
        {
            Error("tree-header", $"root tree entry {node} has a name that is not UTF-8 ({Hex.Preview(key)})", pageNumber, root);
            name = "0x" + Convert.ToHexString(key);
        }
        named.Add((name, MemoryMarshal.Read<TreeHeader>(value.Inline)));
    }

    private void CheckTreeIds(List<(string Name, TreeHeader Header)> named, long lastTreeId)
    {
        var ids = new HashSet<int>();
        foreach (var (name, header) in named)
        {
            var where = new CheckedTree { Name = name, TreeId = header.TreeId };
            if (header.TreeId <= 0 || header.TreeId > lastTreeId)
            {
                Error("tree-header", $"tree id {header.TreeId} is outside 1..{lastTreeId} (the last id handed out)", header.RootPage, where);
            }
            if (!ids.Add(header.TreeId))
            {
                Error("tree-header", $"tree id {header.TreeId} is used by two trees", header.RootPage, where);
            }
        }
    }

    private void CheckOverflow(CheckedTree tree, long first, long leafPage, int node)
    {
        if (!CheckReference(first, tree, leafPage, $"leaf node {node}")) return;
        var page = _runPage;
        if (!_source.TryReadPage(first, page, out var problem))
        {
            Error("overflow", problem!, first, tree);
            return;
        }
        fixed (byte* p = page)
        {
            var header = (PageHeader*)p;
            if (header->PageNumber != first)
            {
                Error("page-number", $"overflow page says it is page {header->PageNumber}", first, tree, 0);
                return;
            }
            if ((header->Flags & PageFlags.TypeMask) != PageFlags.Overflow)
            {
                Error("page-type", $"leaf page {leafPage} node {node} refers to a page with flags {header->Flags}, expected an overflow run", first, tree, 8);
                return;
            }
            var size = header->OverflowSizeBytes;
            if (size <= TreeLimits.MaxInlineValueSizeBytes)
            {
                Error("overflow", $"overflow run holds {size} bytes, not more than the inline limit {TreeLimits.MaxInlineValueSizeBytes}", first, tree, 16);
                return;
            }
            var pageCount = (int)PageLayout.PagesForOverflow(size);
            if (first + pageCount > _nextPage)
            {
                Error("overflow", $"overflow run of {pageCount} pages ({size} bytes) runs past the next page number {_nextPage}", first, tree, 16);
                return;
            }
            for (var q = first; q < first + pageCount; q++)
            {
                if (FreeSpaceLayout.IsReserved(q))
                {
                    Error("overflow", $"overflow run of {pageCount} pages covers reserved page {q}", first, tree, 16);
                    return;
                }
            }
            var duplicate = false;
            for (var q = first; q < first + pageCount; q++)
            {
                if (!Claim(q)) duplicate = true;
            }
            if (duplicate)
            {
                Error("duplicate", $"overflow run of {pageCount} pages overlaps pages reachable elsewhere", first, tree);
                return;
            }
            _report.ReachablePages += pageCount;
            if (header->TreeId != tree.TreeId)
            {
                Error("owner", $"overflow run belongs to tree id {header->TreeId}, but is reachable from tree id {tree.TreeId}", first, tree, 24);
            }
            tree.OverflowPages += pageCount;
            tree.UsedBytes += PageLayout.HeaderSizeBytes + size;
            SetInfo(first, PageKind.Overflow, tree.TreeId, pageCount, PageLayout.HeaderSizeBytes + (long)size);
            for (var q = first + 1; q < first + pageCount; q++)
            {
                _continuation[q >> 6] |= 1UL << (int)(q & 63);
                SetInfo(q, PageKind.OverflowContinuation, tree.TreeId, 0, 0);
            }
            CheckChecksum(p, first, pageCount, tree);
        }
    }
}
