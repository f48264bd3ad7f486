using System.Diagnostics;
using System.Numerics;
using Storage.Paging;

namespace Storage.Allocation;

/// <summary>
/// Page allocation over the persisted free-space bitmaps, with an in-memory count of free pages per
/// section to steer the policy. Only the writer uses it. Changes of a transaction are kept apart
/// (<see cref="_pending"/>) until it commits, and dropped when it rolls back.
/// </summary>
/// <remarks>
/// Policy, chosen for what it does to the next flush: a page requested near another (a split's new
/// sibling, a new tree's root near the tree of names' root) takes the free page closest to it in the same section; otherwise single holes are used
/// only in a section where at least <see cref="DenseSectionFreePages"/> have gathered, so scattered
/// holes do not scatter the flush; otherwise the end of the file, which keeps writes contiguous.
/// Runs of several pages take a contiguous free run in the section of the page they are asked near (an overflow value's
/// leaf), else the first in one bitmap page, or the end of the file.
/// Freed pages can be reused at once: a snapshot that still sees the old contents finds them in the
/// page table or the data file, which the flusher never overwrites past the oldest snapshot.
/// </remarks>
internal sealed unsafe class FreeSpaceMap
{
    public const int DenseSectionFreePages = 32;

    private readonly Dictionary<long, int> _pending = new();
    private int[] _freePerSection = [];
    private long _denseSectionCursor;

    public long TotalFreePages { get; private set; }

    /// <summary>Whether the transaction under way freed pages (so that its commit looks at the free tail).</summary>
    public bool FreedInTransaction { get; private set; }

    /// <summary>A free run at the end of the file at least this long is given back at commit (the end moves down to it).</summary>
    public const int TrimTailMinPages = 64;

    /// <summary>Free pages per section as committed (for stats and tools).</summary>
    public ReadOnlySpan<int> FreePagesPerSection => _freePerSection;

    /// <summary>Builds the section counts from the bitmaps (on open).</summary>
    /// <param name="readPage">The bitmap page's address.</param>
    /// <param name="nextPageNumber">The first page never allocated.</param>
    /// <param name="freeWord">Called with each word's first page and its free bits, where any is free.</param>
    public void Load(Func<long, IntPtr> readPage, long nextPageNumber, Action<long, ulong>? freeWord = null)
    {
        _freePerSection = new int[SectionsFor(nextPageNumber)];
        TotalFreePages = 0;
        for (long region = 0; FreeSpaceLayout.RegionStart(region) < nextPageNumber; region++)
        {
            for (var i = 0; i < FreeSpaceLayout.BitmapPagesPerRegion; i++)
            {
                var first = FreeSpaceLayout.RegionStart(region) + (long)i * FreeSpaceLayout.BitsPerBitmapPage;
                if (first >= nextPageNumber) break;
                var bitmapPage = FreeSpaceLayout.RegionStart(region) + 2 + i;
                var words = (ulong*)((byte*)readPage(bitmapPage) + FreeSpaceLayout.BitmapOffsetBytes);
                for (var s = 0; s < FreeSpaceLayout.SectionsPerBitmapPage; s++)
                {
                    var count = 0;
                    for (var w = 0; w < FreeSpaceLayout.PagesPerSection / 64; w++)
                    {
                        var bits = words[s * (FreeSpaceLayout.PagesPerSection / 64) + w];
                        var firstOfWord = first + (long)(s * (FreeSpaceLayout.PagesPerSection / 64) + w) * 64;
                        if (bits != 0 && firstOfWord + 64 > nextPageNumber && (firstOfWord >= nextPageNumber || (bits >> (int)(nextPageNumber - firstOfWord)) != 0))
                        {
                            // Pages past the high-water mark were never allocated, so never freed: a bit there would hand out a page past the end.
                            throw new StorageCorruptedException($"The free-space bitmap marks pages at or past the next page number {nextPageNumber} as free.", pageNumber: bitmapPage);
                        }
                        count += BitOperations.PopCount(bits);
                        if (bits != 0) freeWord?.Invoke(firstOfWord, bits);
                    }
                    var section = first / FreeSpaceLayout.PagesPerSection + s;
                    if (section < _freePerSection.Length) _freePerSection[section] = count;
                    TotalFreePages += count;
                }
            }
        }
    }

    public long Allocate(IPageAllocationTarget tx, int count, long nearPageNumber)
    {
        Debug.Assert(count > 0, "allocations are of at least one page");
        if (count == 1)
        {
            if (nearPageNumber >= 0 && nearPageNumber < tx.NextPageNumber)
            {
                var section = nearPageNumber / FreeSpaceLayout.PagesPerSection;
                if (FreeIn(section) > 0)
                {
                    var page = FindFreeNear(tx, section, nearPageNumber);
                    if (page >= 0)
                    {
                        Take(tx, page, 1);
                        return page;
                    }
                }
            }
            var dense = FindDenseSection();
            if (dense >= 0)
            {
                var page = FindFreeNear(tx, dense, dense * FreeSpaceLayout.PagesPerSection);
                if (page >= 0)
                {
                    Take(tx, page, 1);
                    return page;
                }
            }
        }
        else
        {
            var run = FindFreeRun(tx, count, nearPageNumber);
            if (run >= 0)
            {
                Take(tx, run, count);
                return run;
            }
        }
        return AllocateAtEnd(tx, count);
    }

    public void Free(IPageAllocationTarget tx, long firstPage, int count)
    {
        for (var p = firstPage; p < firstPage + count; p++)
        {
            if (FreeSpaceLayout.IsReserved(p) || p >= tx.NextPageNumber) ThrowBadFree(p);
            var bitmap = tx.ModifyPage(FreeSpaceLayout.BitmapPageFor(p));
            var words = (ulong*)(bitmap + FreeSpaceLayout.BitmapOffsetBytes);
            var bit = FreeSpaceLayout.BitIndex(p);
            var mask = 1UL << (bit & 63);
            if ((words[bit >> 6] & mask) != 0) ThrowBadFree(p);
            words[bit >> 6] |= mask;
            AddPending(p / FreeSpaceLayout.PagesPerSection, 1);
        }
        FreedInTransaction = true;
    }

    /// <summary>
    /// Gives back the free run at the end of the file: when the pages just below <see cref="IPageAllocationTarget.NextPageNumber"/>
    /// are free for at least <paramref name="minPages"/>, their bits are cleared and the end moves down to the run's start (never
    /// into an earlier region). Pages past the end are neither used nor free; the data file can then be cut there once the
    /// state is synced. Returns the pages given back.
    /// </summary>
    public long TrimTail(IPageAllocationTarget tx, long minPages = TrimTailMinPages)
    {
        var end = tx.NextPageNumber;
        var floor = FreeSpaceLayout.FirstUsablePage(FreeSpaceLayout.RegionOf(end - 1));
        var start = end;
        while (start > floor)
        {
            var words = (ulong*)(tx.GetPage(FreeSpaceLayout.BitmapPageFor(start - 1)) + FreeSpaceLayout.BitmapOffsetBytes);
            var bit = FreeSpaceLayout.BitIndex(start - 1);
            var word = words[bit >> 6] & (ulong.MaxValue >> (63 - (bit & 63)));
            // The free bits at the top of the word, from bit (start - 1) down.
            var free = BitOperations.LeadingZeroCount(~word << (63 - (bit & 63)));
            var take = (int)Math.Min(Math.Min(free, (bit & 63) + 1), start - floor);
            start -= take;
            if (take < (bit & 63) + 1) break;
        }
        if (end - start < minPages) return 0;
        Take(tx, start, checked((int)(end - start)));
        tx.NextPageNumber = start;
        return end - start;
    }

    /// <summary>Free pages from <paramref name="from"/> up to (not including) <paramref name="to"/>, as the transaction sees them.</summary>
    public static long CountFree(IPageAllocationTarget tx, long from, long to)
    {
        long free = 0;
        for (var page = from; page < to;)
        {
            var words = (ulong*)(tx.GetPage(FreeSpaceLayout.BitmapPageFor(page)) + FreeSpaceLayout.BitmapOffsetBytes);
            var bit = FreeSpaceLayout.BitIndex(page);
            var take = (int)Math.Min(64 - (bit & 63), to - page);
            var word = words[bit >> 6] >> (bit & 63);
            if (take < 64) word &= (1UL << take) - 1;
            free += BitOperations.PopCount(word);
            page += take;
        }
        return free;
    }

    /// <summary>
    /// The lowest free run of <paramref name="count"/> pages that ends at or below <paramref name="ceiling"/>, taken; or -1.
    /// Compaction moves pages into the holes low in the file with it, so that the end of the file comes free.
    /// </summary>
    public long AllocateBelow(IPageAllocationTarget tx, int count, long ceiling)
    {
        Debug.Assert(count > 0, "allocations are of at least one page");
        var limit = Math.Min(ceiling, tx.NextPageNumber);
        for (long section = 0; section * FreeSpaceLayout.PagesPerSection < limit; section++)
        {
            if (FreeIn(section) <= 0) continue;
            var page = count == 1 ? FindFreeNear(tx, section, section * FreeSpaceLayout.PagesPerSection) : FindFreeRunFrom(tx, section, count);
            if (page < 0 || page + count > limit) continue;
            Take(tx, page, count);
            return page;
        }
        return -1;
    }

    public void Commit(long nextPageNumber)
    {
        var sections = SectionsFor(nextPageNumber);
        if (sections > _freePerSection.Length) Array.Resize(ref _freePerSection, Math.Max(sections, _freePerSection.Length * 2));
        foreach (var (section, delta) in _pending)
        {
            _freePerSection[section] += delta;
            TotalFreePages += delta;
            Debug.Assert(_freePerSection[section] >= 0 && _freePerSection[section] <= FreeSpaceLayout.PagesPerSection, "section counts stay in range");
        }
        _pending.Clear();
        FreedInTransaction = false;
    }

    public void Rollback()
    {
        _pending.Clear();
        FreedInTransaction = false;
    }

    private int FreeIn(long section)
    {
        var committed = section < _freePerSection.Length ? _freePerSection[section] : 0;
        return _pending.TryGetValue(section, out var delta) ? committed + delta : committed;
    }

    private void AddPending(long section, int delta) =>
        _pending[section] = _pending.TryGetValue(section, out var current) ? current + delta : delta;

    private long FindDenseSection()
    {
        var sections = _freePerSection.Length;
        if (sections == 0 || TotalFreePages + PendingTotal() < DenseSectionFreePages) return -1;
        for (long i = 0; i < sections; i++)
        {
            var section = (_denseSectionCursor + i) % sections;
            if (FreeIn(section) >= DenseSectionFreePages)
            {
                _denseSectionCursor = section;
                return section;
            }
        }
        return -1;
    }

    private long PendingTotal()
    {
        long total = 0;
        foreach (var delta in _pending.Values) total += delta;
        return total;
    }

    /// <summary>The free page in <paramref name="section"/> closest to <paramref name="near"/>, or -1.</summary>
    private static long FindFreeNear(IPageAllocationTarget tx, long section, long near)
    {
        var first = section * FreeSpaceLayout.PagesPerSection;
        var words = (ulong*)(tx.GetPage(FreeSpaceLayout.BitmapPageFor(first)) + FreeSpaceLayout.BitmapOffsetBytes);
        var firstWord = FreeSpaceLayout.BitIndex(first) >> 6;
        const int wordsPerSection = FreeSpaceLayout.PagesPerSection / 64;
        var nearWord = (int)Math.Clamp((near - first) >> 6, 0, wordsPerSection - 1);
        for (var distance = 0; distance < wordsPerSection; distance++)
        {
            foreach (var w in (ReadOnlySpan<int>)[nearWord + distance, nearWord - distance])
            {
                if (w < 0 || w >= wordsPerSection) continue;
                var bits = words[firstWord + w];
                if (bits == 0) continue;
                var page = first + w * 64L + BitOperations.TrailingZeroCount(bits);
                if (page < tx.NextPageNumber) return page;
            }
        }
        return -1;
    }

    /// <summary>A run of <paramref name="count"/> free pages inside one bitmap page, or -1.</summary>
    private long FindFreeRun(IPageAllocationTarget tx, int count, long nearPageNumber)
    {
        if (count > FreeSpaceLayout.BitsPerBitmapPage || TotalFreePages + PendingTotal() < count) return -1;
        const int sectionsPerBitmap = FreeSpaceLayout.SectionsPerBitmapPage;
        // A run asked for near a page (an overflow value, near its leaf) first looks in that page's section, then on in
        // its bitmap, so that the value is written in the same flush run as its leaf where there is room for it.
        if (nearPageNumber >= 0 && nearPageNumber < tx.NextPageNumber)
        {
            var section = nearPageNumber / FreeSpaceLayout.PagesPerSection;
            if (FreeIn(section) >= count)
            {
                var near = FindFreeRunFrom(tx, section, count);
                if (near >= 0) return near;
            }
        }
        for (long s0 = 0; s0 < _freePerSection.Length; s0 += sectionsPerBitmap)
        {
            long free = 0;
            for (var s = s0; s < s0 + sectionsPerBitmap && s < _freePerSection.Length; s++) free += FreeIn(s);
            if (free < count) continue;
            var run = FindFreeRunFrom(tx, s0, count);
            if (run >= 0) return run;
        }
        return -1;
    }

    /// <summary>The first run of <paramref name="count"/> free pages in the bitmap page of <paramref name="section"/>, from that section on, or -1.</summary>
    private static long FindFreeRunFrom(IPageAllocationTarget tx, long section, int count)
    {
        if (count > FreeSpaceLayout.BitsPerBitmapPage) return -1;
        var firstPage = section * FreeSpaceLayout.PagesPerSection;
        var words = (ulong*)(tx.GetPage(FreeSpaceLayout.BitmapPageFor(firstPage)) + FreeSpaceLayout.BitmapOffsetBytes);
        var first = firstPage - FreeSpaceLayout.BitIndex(firstPage);
        var runStart = -1;
        for (var bit = FreeSpaceLayout.BitIndex(firstPage); bit < FreeSpaceLayout.BitsPerBitmapPage; bit++)
        {
            if ((words[bit >> 6] & (1UL << (bit & 63))) != 0)
            {
                if (runStart < 0) runStart = bit;
                if (bit - runStart + 1 == count) return first + runStart + count <= tx.NextPageNumber ? first + runStart : -1;
            }
            else
            {
                runStart = -1;
                if (words[bit >> 6] == 0) bit |= 63; // skip a used word
            }
        }
        return -1;
    }

    /// <summary>Whether the bitmap, as <paramref name="store"/> sees it, marks the page free.</summary>
    public static bool IsMarkedFree(ITreePageStore store, long pageNumber)
    {
        var words = (ulong*)(store.GetPage(FreeSpaceLayout.BitmapPageFor(pageNumber)) + FreeSpaceLayout.BitmapOffsetBytes);
        var bit = FreeSpaceLayout.BitIndex(pageNumber);
        return (words[bit >> 6] & (1UL << (bit & 63))) != 0;
    }

    private void Take(IPageAllocationTarget tx, long firstPage, int count)
    {
        for (var p = firstPage; p < firstPage + count; p++)
        {
            var bitmap = tx.ModifyPage(FreeSpaceLayout.BitmapPageFor(p));
            var words = (ulong*)(bitmap + FreeSpaceLayout.BitmapOffsetBytes);
            var bit = FreeSpaceLayout.BitIndex(p);
            Debug.Assert((words[bit >> 6] & (1UL << (bit & 63))) != 0, "only free pages are taken");
            words[bit >> 6] &= ~(1UL << (bit & 63));
            AddPending(p / FreeSpaceLayout.PagesPerSection, -1);
        }
    }

    private long AllocateAtEnd(IPageAllocationTarget tx, int count)
    {
        var start = tx.NextPageNumber;
        var region = FreeSpaceLayout.RegionOf(start);
        var regionEnd = FreeSpaceLayout.RegionStart(region + 1);
        if (start + count > regionEnd)
        {
            // The run does not fit before the next region's bitmaps: leave the tail free and start after them.
            tx.NextPageNumber = regionEnd;
            if (regionEnd > start) Free(tx, start, (int)(regionEnd - start));
            start = regionEnd;
        }
        if (FreeSpaceLayout.RegionStart(FreeSpaceLayout.RegionOf(start)) == start)
        {
            InitializeRegion(tx, FreeSpaceLayout.RegionOf(start));
            start = FreeSpaceLayout.FirstUsablePage(FreeSpaceLayout.RegionOf(start));
        }
        tx.NextPageNumber = start + count;
        return start;
    }

    private static void InitializeRegion(IPageAllocationTarget tx, long region)
    {
        var first = FreeSpaceLayout.RegionStart(region);
        for (var i = 0; i < FreeSpaceLayout.BitmapPagesPerRegion; i++)
        {
            var page = first + 2 + i;
            FreeSpaceLayout.InitializeBitmapPage(tx.CreatePage(page), page);
        }
        tx.NextPageNumber = FreeSpaceLayout.FirstUsablePage(region);
    }

    private static int SectionsFor(long nextPageNumber) =>
        checked((int)((nextPageNumber + FreeSpaceLayout.PagesPerSection - 1) / FreeSpaceLayout.PagesPerSection));

    private static void ThrowBadFree(long page) =>
        throw new StorageCorruptedException($"Page {page} was freed but is reserved, beyond the end, or free already.", pageNumber: page);
}
