using System.Numerics;
using System.Runtime.InteropServices;
using Storage.Allocation;
using Storage.Paging;

namespace Storage.Inspection;

/// <summary>The check's free-space half: the reserved pages and bitmaps, free against reachable pages, sections and holes.</summary>
internal sealed unsafe partial class EnvironmentChecker
{
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
        if (!_source.TryReadPage(bitmapPage, page, out var problem))
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
                    pages[w * 64 + BitOperations.TrailingZeroCount(bits)] = new CheckedPage(PageKind.Free, -1, 0, 0);
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
            _report.Add(new CheckedSection(s, firstPage, pages, count, largest));
        }
    }

    /// <summary>
    /// Ranges of the data file whose blocks were given back to the file system (holes, found with SEEK_HOLE and SEEK_DATA
    /// on Linux) must hold only free pages: a page in use there (reached by a tree, or a header or bitmap) reads as
    /// zeros. A page whose current version is held outside the file (rebuilt from the journal, or in the page table) is
    /// not read from the file and may lie in one: a commit that takes a free page into use reserves its blocks, which
    /// read as a hole until the flusher writes the page.
    /// </summary>
    private void CheckHoles()
    {
        if (!Platform.Posix.IsSupported || _source.HoleProbe is not { IsInvalid: false } probe) return;
        var fd = probe.DangerousGetHandle();
        var length = _source.FilePageCount * PageSize;
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
                if (IsSeen(page) && !_source.IsHeldOutsideDataFile(page, RunFirstPage(page)) && IsStillHole(fd, page)) inHoles.Add(page);
            }
            position = Math.Max(data, hole + 1);
        }
        inHoles.Flush();
        _report.HoleBytes = holeBytes;
    }

    /// <summary>
    /// Whether the page still lies in a hole. Asked after <see cref="ICheckSource.IsHeldOutsideDataFile"/> said no: in an
    /// open environment the flusher writes a page into the file before it drops the version it held, so a page that lay in a
    /// hole when the file was scanned, but was held nowhere else when asked, was written meanwhile, unless this still finds
    /// no data under it.
    /// </summary>
    private static bool IsStillHole(nint fd, long page)
    {
        var data = Platform.Posix.LSeek(fd, page * PageSize, Platform.Posix.SeekData);
        return data < 0 || data >= (page + 1) * PageSize;
    }

    /// <summary>The first page of the overflow run a page lies inside, or the page itself.</summary>
    private long RunFirstPage(long page)
    {
        while (page > 0 && (_continuation[page >> 6] & (1UL << (int)(page & 63))) != 0) page--;
        return page;
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
            owner._report.Add(new CheckProblem(ProblemSeverity.Error, kind, message, owner._source.DataPath, _start, null,
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
