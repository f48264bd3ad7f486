using System.Numerics;
using Storage.Allocation;
using Storage.Paging;
using Storage.State;

namespace Storage.Flush;

/// <summary>
/// Gives the data file's free space back to the file system, on the flusher's thread right after a sync: the file is cut
/// when its end was given back (<see cref="FreeSpaceMap.TrimTail"/>), and runs of free pages inside it are punched out
/// (their blocks freed, the length kept), so that <c>du</c> shrinks.
/// </summary>
/// <remarks>
/// <para>A page is punched only when it is free both in the synced state and in the writer's newest state, while the
/// flusher holds the flush lock (no page is written meanwhile, and the file holds exactly the synced state) and the write
/// lock (no commit takes a page meanwhile). Then no one reads what the file holds there: every snapshot is at least the
/// synced state, where the page is free, and a later version of it lives in the page table until a flush writes it (into
/// the hole, which the file system fills); recovery starts from the synced state and rebuilds from the journal any page
/// it uses after that.</para>
/// <para>A commit that takes a punched page into use reserves its blocks again first (<see cref="DataFile.RefillHoles"/>),
/// so that a full disk fails that commit rather than the flusher's write later.</para>
/// </remarks>
internal sealed unsafe class SpaceReturner
{
    /// <summary>Free runs shorter than this stay: punching them would cut the file into many small extents for little space.</summary>
    public const int MinPunchPages = 16;

    /// <summary>How long the flusher waits for the write lock before leaving the punching to the next sync.</summary>
    private const int WriteLockWaitMs = 20;

    private readonly FlushPort _port;
    private readonly HashSet<long> _bitmapsChanged = [];
    private bool _scanAll = true;

    public SpaceReturner(FlushPort port)
    {
        _port = port;
    }

    /// <summary>Bytes cut from the end of the data file since open.</summary>
    public long CutBytes { get; private set; }

    /// <summary>Free-space bitmap pages a flush wrote: the runs they mark free are looked at after the next sync.</summary>
    public void NoteFlushed(long pageNumber)
    {
        if (FreeSpaceLayout.IsBitmapPage(pageNumber)) _bitmapsChanged.Add(pageNumber);
    }

    /// <summary>Looks at every bitmap after the next sync, not only those flushed since (compaction asks for it).</summary>
    public void ScanAllNextTime() => _scanAll = true;

    /// <summary>
    /// After a sync of <paramref name="synced"/>, with nothing flushed past it: cuts the end of the file, then punches the
    /// free runs of the bitmaps flushed since the last time (all of them the first time, and after compaction).
    /// </summary>
    /// <param name="synced">The state just synced; the data file holds exactly it.</param>
    /// <param name="writerHeld">The caller holds the write lock already (closing the environment): the file is cut to what it needs.</param>
    public void AfterSync(in CommitRecord synced, bool writerHeld)
    {
        CutBytes += _port.DataFile.TryShrink(synced.NextPageNumber, closing: writerHeld);
        if (_bitmapsChanged.Count == 0 && !_scanAll) return;
        if (!_port.DataFile.CanPunch)
        {
            _bitmapsChanged.Clear();
            return;
        }
        if (!writerHeld && !_port.WriterLock.TryEnter(WriteLockWaitMs)) return;
        var mapping = _port.DataFile.AcquireMapping();
        try
        {
            var writer = _port.States.Writer;
            var end = Math.Min(synced.NextPageNumber, writer.NextPageNumber);
            if (_scanAll)
            {
                for (long region = 0; FreeSpaceLayout.RegionStart(region) < end; region++)
                {
                    for (var i = 0; i < FreeSpaceLayout.BitmapPagesPerRegion; i++) _bitmapsChanged.Add(FreeSpaceLayout.RegionStart(region) + 2 + i);
                }
            }
            foreach (var bitmap in _bitmapsChanged)
            {
                var first = FreeSpaceLayout.FirstPageOfBitmap(bitmap);
                if (first >= end || bitmap >= mapping.PageCount) continue;
                var inFile = (ulong*)(mapping.PagePointer(bitmap) + FreeSpaceLayout.BitmapOffsetBytes);
                var newest = _port.PageTable.TryGetPage(bitmap, writer.TransactionId, out var version, out _)
                    ? (ulong*)(version + FreeSpaceLayout.BitmapOffsetBytes)
                    : inFile;
                PunchFreeRuns(first, inFile, newest, end);
            }
            _bitmapsChanged.Clear();
            _scanAll = false;
        }
        catch (StorageException)
        {
            // The space stays taken; nothing else changed. The bitmaps are looked at again after the next sync.
        }
        finally
        {
            mapping.Release();
            if (!writerHeld) _port.WriterLock.Release();
        }
    }

    /// <summary>Punches the runs free in both bitmaps (of the pages from <paramref name="first"/>, below <paramref name="end"/>) and not punched yet.</summary>
    private void PunchFreeRuns(long first, ulong* inFile, ulong* newest, long end)
    {
        var dataFile = _port.DataFile;
        long runStart = -1;
        const int words = FreeSpaceLayout.BitsPerBitmapPage / 64;
        for (var w = 0; w <= words; w++)
        {
            var page = first + w * 64L;
            var bits = w == words || page >= end ? 0UL : inFile[w] & newest[w] & ~dataFile.HolesIn(page);
            if (page + 64 > end && page < end) bits &= (1UL << (int)(end - page)) - 1;
            // Walk the word's runs of ones, carrying an open run across words.
            var offset = 0;
            while (offset < 64)
            {
                var rest = bits >> offset;
                if (runStart >= 0)
                {
                    var ones = BitOperations.TrailingZeroCount(~rest);
                    if (ones >= 64 - offset)
                    {
                        offset = 64;
                        break;
                    }
                    var runEnd = page + offset + ones;
                    if (runEnd - runStart >= MinPunchPages && !dataFile.PunchHoles(runStart, runEnd - runStart)) return;
                    runStart = -1;
                    offset += ones;
                }
                else
                {
                    if (rest == 0) break;
                    offset += BitOperations.TrailingZeroCount(rest);
                    runStart = page + offset;
                }
            }
            if (w == words || page >= end) break;
        }
    }
}
