using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using Storage.Allocation;
using Storage.Paging;
using Storage.Platform;
using Storage.Trees;

namespace Storage.Inspection;

/// <summary>
/// The full consistency check of an environment, on a read-only <see cref="EnvironmentSnapshot"/>. Unlike
/// <see cref="BTree.Validate"/>, which stops at the first broken invariant, it reports every problem it
/// finds (up to a cap) with page, tree and byte offset, and goes on with the rest of the file.
/// </summary>
/// <remarks>
/// Checks: both header slots; every page below the next page number reachable exactly once (from the root tree
/// of names or a named tree), or a reserved page, or marked free in the bitmaps, and never two of those; page
/// numbers, types, owning tree, checksums and writing transactions (pages rebuilt from the journal included); slotted-page bounds and nodes; key order within pages and against the
/// parents' separators; equal leaf depths; branch shape; overflow runs (header, size, bounds, checksum over the
/// run); each tree's counters against its header. Memory: one bit per page for "seen" and one for "free", a
/// page buffer per tree level, and optionally one <see cref="PageInfo"/> per page.
/// </remarks>
internal sealed unsafe class EnvironmentChecker
{
    /// <summary>At most this many problems are listed; the rest are counted.</summary>
    public const int MaxProblems = 1000;

    private const int PageSize = PageLayout.PageSizeBytes;

    private readonly EnvironmentSnapshot _snapshot;
    private readonly CheckReport _report = new();
    private readonly byte[][] _levels = new byte[TreeNodeLayout.MaxTreeDepth + 1][];
    private readonly byte[] _runPage = new byte[PageSize];
    private readonly Action<long, long>? _progress;
    private ulong[] _seen = [];
    private long _claimed;
    private long _nextPage;

    private EnvironmentChecker(EnvironmentSnapshot snapshot, bool collectPages, Action<long, long>? progress)
    {
        _snapshot = snapshot;
        _progress = progress;
        _nextPage = snapshot.NextPageNumber;
        // The per-page arrays are sized by the next page number, which a damaged header or entry can put anywhere: no
        // further than the file, what the journal rebuilt past it, and one region's slack (a new region starts after
        // its reserved pages) is checked.
        var limit = Math.Max(snapshot.FilePageCount, snapshot.JournalPagesEnd) + FreeSpaceLayout.PagesPerRegion;
        if (_nextPage > limit)
        {
            Error("next-page", $"the state says {_nextPage} pages are in use, but the file holds {snapshot.FilePageCount} and the journal reaches page {snapshot.JournalPagesEnd}; only the first {limit} are checked");
            _nextPage = limit;
        }
        if (collectPages) _report.Pages = new PageInfo[_nextPage];
    }

    /// <summary>Opens <paramref name="directory"/> read-only and checks it; an environment that cannot be opened at all is one problem.</summary>
    public static CheckReport Check(string directory, bool collectPages = false, Action<long, long>? progress = null)
    {
        EnvironmentSnapshot snapshot;
        try
        {
            snapshot = EnvironmentSnapshot.Open(directory);
        }
        catch (InspectionException e)
        {
            var failed = new CheckReport();
            failed.Problems.Add(new InspectionProblem(ProblemSeverity.Error, "open", e.Message));
            return failed;
        }
        using (snapshot)
        {
            return Check(snapshot, collectPages, progress);
        }
    }

    /// <summary>Checks an open snapshot.</summary>
    /// <param name="snapshot">The state to check.</param>
    /// <param name="collectPages">Whether to fill <see cref="CheckReport.Pages"/>.</param>
    /// <param name="progress">Called now and then with (pages examined, pages in total).</param>
    public static CheckReport Check(EnvironmentSnapshot snapshot, bool collectPages = false, Action<long, long>? progress = null)
    {
        ArgumentNullException.ThrowIfNull(snapshot);
        return new EnvironmentChecker(snapshot, collectPages, progress).Run();
    }

    private CheckReport Run()
    {
        foreach (var problem in _snapshot.Problems) Add(problem);
        _report.TransactionId = _snapshot.TransactionId;
        _report.PagesInUseOrFree = _nextPage;
        _report.FilePages = _snapshot.FilePageCount;
        _seen = new ulong[(_nextPage + 63) / 64];
        var free = new ulong[_seen.Length];

        var bitmapsOk = CheckReservedPages(free);
        var rootHeader = _snapshot.RootTree;
        var root = new TreeReport { Name = null, TreeId = 0, RootPage = rootHeader.RootPage, Depth = rootHeader.Depth, HeaderEntries = rootHeader.Entries };
        _report.Trees.Add(root);
        var named = new List<(string Name, TreeHeader Header)>();
        WalkTree(root, rootHeader, named);
        CheckTreeIds(named, rootHeader.LastTreeId);
        foreach (var (name, header) in named)
        {
            var tree = new TreeReport { Name = name, TreeId = header.TreeId, RootPage = header.RootPage, Depth = header.Depth, HeaderEntries = header.Entries };
            _report.Trees.Add(tree);
            WalkTree(tree, header, null);
        }
        CompareFreeSpace(free, bitmapsOk);
        CheckHoles();
        _progress?.Invoke(_nextPage, _nextPage);
        return _report;
    }

    private void Add(InspectionProblem problem)
    {
        if (_report.Problems.Count < MaxProblems) _report.Problems.Add(problem);
        else _report.ProblemsOmitted++;
    }

    private void Error(string kind, string message, long page = -1, TreeReport? tree = null, long offsetInPage = -1)
    {
        var offset = page >= 0 ? page * PageSize + Math.Max(0, offsetInPage) : -1;
        Add(new InspectionProblem(ProblemSeverity.Error, kind, message, _snapshot.DataPath, page, tree?.DisplayName, offset));
    }

    /// <summary>Marks a page seen; false when it was seen before.</summary>
    private bool Claim(long page)
    {
        ref var word = ref _seen[page >> 6];
        var mask = 1UL << (int)(page & 63);
        if ((word & mask) != 0) return false;
        word |= mask;
        if ((++_claimed & 4095) == 0) _progress?.Invoke(_claimed, _nextPage);
        return true;
    }

    private bool IsSeen(long page) => (_seen[page >> 6] & (1UL << (int)(page & 63))) != 0;

    private void SetInfo(long page, PageKind kind, int treeId, int items, long usedBytes)
    {
        if (_report.Pages is { } pages && page >= 0 && page < pages.Length)
        {
            pages[page] = new PageInfo { Kind = kind, TreeId = treeId, Items = items, UsedBytes = usedBytes };
        }
    }

    /// <summary>Headers and bitmap pages of every region: claims them and reads the free bits. False when a bitmap is unusable.</summary>
    private bool CheckReservedPages(ulong[] free)
    {
        var ok = true;
        for (long region = 0; FreeSpaceLayout.RegionStart(region) < _nextPage; region++)
        {
            var start = FreeSpaceLayout.RegionStart(region);
            for (var i = 0; i < 2; i++)
            {
                if (start + i >= _nextPage) continue;
                Claim(start + i);
                _report.ReservedPages++;
                SetInfo(start + i, region == 0 ? PageKind.FileHeader : PageKind.Reserved, -1, 0, region == 0 ? PageLayout.HeaderSizeBytes + Storage.State.FileHeader.SizeBytes : 0);
            }
            for (var i = 0; i < FreeSpaceLayout.BitmapPagesPerRegion; i++)
            {
                var bitmapPage = start + 2 + i;
                if (bitmapPage >= _nextPage) break;
                Claim(bitmapPage);
                _report.ReservedPages++;
                SetInfo(bitmapPage, PageKind.FreeSpaceBitmap, -1, 0, PageSize);
                ok &= ReadBitmap(bitmapPage, free);
            }
        }
        return ok;
    }

    private bool ReadBitmap(long bitmapPage, ulong[] free)
    {
        var page = _runPage;
        if (!_snapshot.TryReadPage(bitmapPage, page, out var problem))
        {
            Error("bitmap", $"free-space bitmap page cannot be read: {problem}", bitmapPage);
            return false;
        }
        fixed (byte* p = page)
        {
            var header = (PageHeader*)p;
            if (header->PageNumber != bitmapPage)
            {
                Error("page-number", $"free-space bitmap page says it is page {header->PageNumber}", bitmapPage);
                return false;
            }
            if (header->Flags != PageFlags.FreeSpaceBitmap)
            {
                Error("page-type", $"page should be a free-space bitmap but has flags {header->Flags}", bitmapPage, offsetInPage: 8);
                return false;
            }
            var checksumOk = CheckChecksum(p, bitmapPage, 1, null);
            var words = MemoryMarshal.Cast<byte, ulong>(page.AsSpan(FreeSpaceLayout.BitmapOffsetBytes, FreeSpaceLayout.BitmapBytes));
            var first = FreeSpaceLayout.FirstPageOfBitmap(bitmapPage);
            for (var w = 0; w < words.Length; w++)
            {
                var bits = words[w];
                if (bits == 0) continue;
                var firstOfWord = first + w * 64L;
                if (firstOfWord >= _nextPage || (firstOfWord + 64 > _nextPage && (bits >> (int)(_nextPage - firstOfWord)) != 0))
                {
                    var beyond = firstOfWord >= _nextPage ? firstOfWord + BitOperations.TrailingZeroCount(bits) : _nextPage + BitOperations.TrailingZeroCount(bits >> (int)(_nextPage - firstOfWord));
                    Error("free-space", $"the bitmap marks page {beyond}, at or past the next page number {_nextPage}, as free", bitmapPage,
                        offsetInPage: FreeSpaceLayout.BitmapOffsetBytes + w * 8);
                    if (firstOfWord >= _nextPage) continue;
                    bits &= (1UL << (int)(_nextPage - firstOfWord)) - 1;
                }
                // Bitmaps cover whole 64-page words, which never straddle two bitmap pages.
                free[firstOfWord >> 6] = bits;
            }
            return checksumOk;
        }
    }

    /// <summary>
    /// Verifies the stored checksum of a page or run (pages rebuilt from the journal carry the checksum their
    /// transaction stamped, like data-file pages), and that no transaction after the snapshot's wrote it.
    /// </summary>
    private bool CheckChecksum(byte* first, long firstPage, int pageCount, TreeReport? tree)
    {
        var writtenBy = ((PageHeader*)first)->TransactionId;
        if (writtenBy > _snapshot.TransactionId)
        {
            Error("future", $"page was written by transaction {writtenBy}, after the state checked (transaction {_snapshot.TransactionId}): the data file holds a change the journal no longer has (or the environment was written to while it was checked)", firstPage, tree, 14);
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
            for (var p = firstPage + 1; p < firstPage + pageCount; p++)
            {
                if (!_snapshot.TryReadPage(p, buffer, out var problem))
                {
                    Error("overflow", $"overflow run page cannot be read: {problem}", p, tree);
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

    private void WalkTree(TreeReport tree, in TreeHeader header, List<(string, TreeHeader)>? named)
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
    private bool CheckReference(long page, TreeReport tree, long fromPage, string what)
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

    private void WalkPage(TreeReport tree, long pageNumber, int level, int depth, ReadOnlySpan<byte> lower, bool hasLower,
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
        if (!_snapshot.TryReadPage(pageNumber, buffer, out var readProblem))
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

    private void CheckKeyInRange(TreeReport tree, byte* p, long pageNumber, int index, ReadOnlySpan<byte> key, ReadOnlySpan<byte> lower, bool hasLower,
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

    private void AddNamedTree(TreeReport root, long pageNumber, int node, ReadOnlySpan<byte> key, LeafValue value, List<(string, TreeHeader)> named)
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
            var where = new TreeReport { Name = name, TreeId = header.TreeId };
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

    private void CheckOverflow(TreeReport tree, long first, long leafPage, int node)
    {
        if (!CheckReference(first, tree, leafPage, $"leaf node {node}")) return;
        var page = _runPage;
        if (!_snapshot.TryReadPage(first, page, out var problem))
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
            for (var q = first + 1; q < first + pageCount; q++) SetInfo(q, PageKind.OverflowContinuation, tree.TreeId, 0, 0);
            CheckChecksum(p, first, pageCount, tree);
        }
    }

    /// <summary>Reachable (or reserved) and free must be exact complements below the next page number.</summary>
    private void CompareFreeSpace(ulong[] free, bool bitmapsOk)
    {
        var inUseAndFree = new RunCollector(this, "free-space", "marked free in the bitmap but in use", free: true);
        var leaked = new RunCollector(this, "leaked", "neither reachable nor marked free (leaked)", free: false);
        for (long w = 0; w < _seen.Length; w++)
        {
            var seen = _seen[w];
            var freeBits = free[w];
            var validBits = (w + 1) * 64 <= _nextPage ? ulong.MaxValue : (1UL << (int)(_nextPage - w * 64)) - 1;
            _report.FreePages += BitOperations.PopCount(freeBits & ~seen & validBits);
            var both = seen & freeBits & validBits;
            var neither = ~seen & ~freeBits & validBits;
            for (; both != 0; both &= both - 1) inUseAndFree.Add(w * 64 + BitOperations.TrailingZeroCount(both));
            for (; neither != 0; neither &= neither - 1) leaked.Add(w * 64 + BitOperations.TrailingZeroCount(neither));
            if (_report.Pages is { } pages)
            {
                for (var bits = freeBits & ~seen & validBits; bits != 0; bits &= bits - 1)
                {
                    pages[w * 64 + BitOperations.TrailingZeroCount(bits)] = new PageInfo { Kind = PageKind.Free, TreeId = -1 };
                }
            }
        }
        // Without a usable bitmap every page it covers would look leaked; the bitmap's own problem says enough.
        if (bitmapsOk) leaked.Flush();
        inUseAndFree.Flush();
        _report.LeakedPages = leaked.Total;

        var sections = (_nextPage + FreeSpaceLayout.PagesPerSection - 1) / FreeSpaceLayout.PagesPerSection;
        for (long s = 0; s < sections; s++)
        {
            var firstPage = s * FreeSpaceLayout.PagesPerSection;
            var pages = Math.Min(FreeSpaceLayout.PagesPerSection, _nextPage - firstPage);
            long count = 0, run = 0, largest = 0;
            for (var pg = firstPage; pg < firstPage + pages; pg++)
            {
                var isFree = (free[pg >> 6] & (1UL << (int)(pg & 63))) != 0 && !IsSeen(pg);
                if (isFree)
                {
                    count++;
                    largest = Math.Max(largest, ++run);
                }
                else
                {
                    run = 0;
                }
            }
            _report.Sections.Add(new SectionReport(s, firstPage, pages, count, largest));
        }
    }

    /// <summary>
    /// Ranges of the data file whose blocks were given back to the file system (holes, found with SEEK_HOLE and SEEK_DATA
    /// on Linux) must hold only free pages: a page in use there (reached by a tree, or a header or bitmap) reads as
    /// zeros. A page whose current version the journal holds is not read from the file and may lie in one.
    /// </summary>
    private void CheckHoles()
    {
        if (!Platform.Posix.IsSupported || _snapshot.DataHandle.IsInvalid) return;
        var fd = _snapshot.DataHandle.DangerousGetHandle();
        var length = _snapshot.FilePageCount * PageSize;
        var inHoles = new RunCollector(this, "hole", "in use, but the data file has no blocks there (they read as zeros)", free: true);
        long position = 0, holeBytes = 0;
        while (position < length)
        {
            var hole = Platform.Posix.LSeek(fd, position, Platform.Posix.SeekHole);
            if (hole < 0 || hole >= length) break;
            var data = Platform.Posix.LSeek(fd, hole, Platform.Posix.SeekData);
            if (data < 0 || data > length) data = length;
            holeBytes += data - hole;
            var end = Math.Min(data / PageSize, _nextPage);
            for (var page = (hole + PageSize - 1) / PageSize; page < end; page++)
            {
                if (IsSeen(page) && !_snapshot.IsFromJournal(page)) inHoles.Add(page);
            }
            position = Math.Max(data, hole + 1);
        }
        inHoles.Flush();
        _report.HoleBytes = holeBytes;
    }

    /// <summary>Gathers consecutive pages with the same finding into one problem.</summary>
    private sealed class RunCollector(EnvironmentChecker owner, string kind, string what, bool free)
    {
        private long _start = -1;
        private long _end = -1;

        public long Total { get; private set; }

        public void Add(long page)
        {
            Total++;
            if (page == _end + 1 && _start >= 0)
            {
                _end = page;
                return;
            }
            Flush();
            _start = _end = page;
        }

        public void Flush()
        {
            if (_start < 0) return;
            var range = _start == _end ? $"page {_start} is" : $"pages {_start}-{_end} ({_end - _start + 1}) are";
            var bitmapPage = FreeSpaceLayout.BitmapPageFor(_start);
            var owner2 = owner.OwnerOf(_start);
            var message = $"{range} {what}; bitmap page {bitmapPage}, bit {FreeSpaceLayout.BitIndex(_start)}{(free && owner2 is not null ? $", used by {owner2}" : "")}";
            owner.Add(new InspectionProblem(ProblemSeverity.Error, kind, message, owner._snapshot.DataPath, _start, null,
                bitmapPage * PageSize + FreeSpaceLayout.BitmapOffsetBytes + FreeSpaceLayout.BitIndex(_start) / 8));
            _start = _end = -1;
        }
    }

    private string? OwnerOf(long page)
    {
        if (_report.Pages is not { } pages || page >= pages.Length) return null;
        var info = pages[page];
        if (info.Kind is PageKind.FileHeader or PageKind.FreeSpaceBitmap or PageKind.Reserved) return $"a reserved {info.Kind} page";
        var tree = _report.Trees.FirstOrDefault(t => t.TreeId == info.TreeId);
        return tree is null ? null : $"tree '{tree.DisplayName}' ({info.Kind})";
    }
}
