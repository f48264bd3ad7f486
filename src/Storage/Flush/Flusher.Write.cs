using System.Diagnostics;
using System.Runtime.InteropServices;
using Storage.Paging;
using Storage.Scratch;
using Storage.State;

namespace Storage.Flush;

/// <summary>Writing one flush: the live versions collected, sorted, with short gaps of clean pages filled, merged into runs.</summary>
internal sealed partial class Flusher
{
    private void WriteUpTo(long upTo, CommitRecord record, bool throwIfFull)
    {
        var started = Stopwatch.GetTimestamp();
        Interlocked.Exchange(ref _journalBytesSinceFlush, 0);
        _collected.Sort(static (a, b) => a.PageNumber.CompareTo(b.PageNumber));
        SelectLiveVersions(record.NextPageNumber);
        long end = record.NextPageNumber, pages = 0, bytes = 0, leaves = 0, branches = 0, overflows = 0;
        foreach (var (page, buffer) in _pages)
        {
            end = Math.Max(end, page + buffer.PageCount);
            Space.NoteFlushed(page);
            pages += buffer.PageCount;
            bytes += buffer.SizeBytes;
            CountType(buffer, ref leaves, ref branches, ref overflows);
        }
        int runs;
        long gapPages = 0;
        try
        {
            _port.DataFile.EnsurePageCount(end);
            var mapping = _port.DataFile.AcquireMapping();
            try
            {
                gapPages = FillGaps(mapping);
                runs = _pages.Count == 0 ? 0 : _port.DataFile.WriteSorted(_pages);
            }
            finally
            {
                mapping.Release();
            }
        }
        catch (StorageFullException)
        {
            // Commits reserve the space their pages take, so only a file system that cannot reserve (or one that
            // allocates anew on every write) gets here. The pages written so far hold what the journal holds; the rest
            // were not written. The versions stay in the page table, and the flush is taken up again from this commit.
            _pages.Clear();
            _collected.Clear();
            _retryRecord = record;
            _retryAfterTimestamp = Stopwatch.GetTimestamp() + FullDiskRetryMs * Stopwatch.Frequency / 1000;
            FlushesDeferredForSpace++;
            if (!throwIfFull) return;
            _metFullDisk = true;
            throw;
        }
        _retryRecord = null;
        _retryAfterTimestamp = 0;
        bytes += gapPages * PageLayout.PageSizeBytes;

        _removed.Clear();
        _port.PageTable.RemoveUpTo(upTo, _collected, _removed);
        _port.Reclaimer.Retire(_removed, _port.Readers.AdvanceEpoch());
        _pages.Clear();
        _collected.Clear();

        _flushedUpTo = upTo;
        _flushedRecord = record;
        Flushes++;
        FlushedPages += pages;
        FlushRuns += runs;
        FlushedBytes += bytes;
        NotifyFlush(new FlushStats
        {
            FlushNumber = Flushes,
            UpToTransactionId = upTo,
            PagesWritten = pages,
            Runs = runs,
            BytesWritten = bytes,
            LeafPages = leaves,
            BranchPages = branches,
            OverflowPages = overflows,
            GapPagesWritten = gapPages,
            Duration = Stopwatch.GetElapsedTime(started),
        });
    }

    private void NotifyFlush(in FlushStats stats)
    {
        try
        {
            _port.Options.OnFlush?.Invoke(stats);
        }
        catch (Exception)
        {
            // A failing observer must not stop the flusher, which would poison the environment.
        }
    }

    /// <summary>
    /// Picks what to write from the collected versions (sorted by page). Where two overlap, the older is dead:
    /// its pages were freed before the newer one was allocated over them (an overflow run reusing a freed
    /// page, or the reverse), so writing it would overwrite live data with garbage. It is dropped, and so is a version of
    /// a page at or past the state's end (the end moved down over it: it is free, and writing it would only make the file
    /// longer again).
    /// </summary>
    private void SelectLiveVersions(long nextPageNumber)
    {
        _pages.Clear();
        var collected = CollectionsMarshal.AsSpan(_collected);
        _pages.EnsureCapacity(collected.Length);
        for (var i = 0; i < collected.Length; i++)
        {
            if (collected[i].Dropped) continue;
            var end = collected[i].PageNumber + collected[i].Buffer.PageCount;
            for (var j = i + 1; j < collected.Length && collected[j].PageNumber < end; j++)
            {
                Debug.Assert(collected[i].TransactionId != collected[j].TransactionId, "one transaction's pages never overlap");
                if (collected[i].TransactionId < collected[j].TransactionId)
                {
                    collected[i].Dropped = true;
                    break;
                }
                collected[j].Dropped = true;
            }
            if (!collected[i].Dropped && end <= nextPageNumber) _pages.Add((collected[i].PageNumber, collected[i].Buffer));
        }
    }

    /// <summary>Where <see cref="FillGaps"/> builds the pages with the gaps between them; it then trades places with <see cref="_pages"/>.</summary>
    private List<(long PageNumber, ScratchBuffer Buffer)> _withGaps = [];

    /// <summary>
    /// The seek cost model (<see cref="StorageOptions.FlushGapFillBytes"/>): between two runs of pages to write, a gap of
    /// clean pages short enough, in the page cache, and not given back to the file system, is written back unchanged from
    /// the map (which holds exactly what the file holds: only this thread writes it), so the two runs become one write.
    /// Returns the clean pages added.
    /// </summary>
    private unsafe long FillGaps(DataFileMapping mapping)
    {
        var maxGap = _port.Options.FlushGapFillBytes / PageLayout.PageSizeBytes;
        if (maxGap <= 0 || _pages.Count < 2 || !Platform.Posix.IsSupported) return 0;
        _withGaps.Clear();
        long filled = 0;
        for (var i = 0; i < _pages.Count; i++)
        {
            _withGaps.Add(_pages[i]);
            if (i + 1 == _pages.Count) break;
            var gapStart = _pages[i].PageNumber + _pages[i].Buffer.PageCount;
            var gap = _pages[i + 1].PageNumber - gapStart;
            if (gap <= 0 || gap > maxGap || gapStart + gap > mapping.PageCount || _port.DataFile.IsHole(gapStart, gap)) continue;
            var pointer = mapping.PagePointer(gapStart);
            if (!Resident(pointer, gap * PageLayout.PageSizeBytes)) continue;
            _withGaps.Add((gapStart, ScratchBuffer.ViewOf(pointer, (int)gap)));
            filled += gap;
        }
        if (filled == 0) return 0;
        (_pages, _withGaps) = (_withGaps, _pages);
        _withGaps.Clear();
        return filled;
    }

    /// <summary>Whether the range is in the page cache (mincore): writing back a page that is not would read it first.</summary>
    private static unsafe bool Resident(byte* pointer, long lengthBytes)
    {
        const int osPage = 4096;
        var start = (byte*)((nuint)pointer & ~(nuint)(osPage - 1));
        var length = (nuint)(pointer + lengthBytes - start);
        var pages = (int)((length + osPage - 1) / osPage);
        Span<byte> vector = stackalloc byte[Math.Min(pages, 256)];
        if (pages > vector.Length) return false;
        fixed (byte* v = vector)
        {
            if (Platform.Posix.MinCore(start, length, v) != 0) return false;
        }
        foreach (var b in vector)
        {
            if ((b & 1) == 0) return false;
        }
        return true;
    }

    private static unsafe void CountType(ScratchBuffer buffer, ref long leaves, ref long branches, ref long overflows)
    {
        var flags = ((PageHeader*)buffer.Pointer)->Flags;
        if ((flags & PageFlags.Leaf) != 0) leaves++;
        else if ((flags & PageFlags.Branch) != 0) branches++;
        else if ((flags & PageFlags.Overflow) != 0) overflows += buffer.PageCount;
    }
}
