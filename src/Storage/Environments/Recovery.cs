using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Storage.Journal;
using Storage.Paging;
using Storage.Trees;

namespace Storage.Environments;

/// <summary>
/// Replays the journal entries that follow the last synced transaction into the data file, by the rules
/// of <see cref="JournalReplay"/>: a torn tail ends the replay; damage followed by valid entries fails the
/// open naming file and offset.
/// </summary>
internal sealed unsafe class Recovery : IDisposable
{
    private readonly DataFile _dataFile;
    private readonly Dictionary<long, PageImage> _pages = [];
    private long _sequence;

    public Recovery(DataFile dataFile)
    {
        _dataFile = dataFile;
    }

    public long LastTransactionId { get; private set; }

    public long NextPageNumber { get; private set; }

    public TreeHeader RootTree { get; private set; }

    public int EntriesReplayed { get; private set; }

    public int PagesWritten { get; private set; }

    /// <summary>Replays; returns whether anything was applied (the caller then writes the pages and a header).</summary>
    public bool Replay(string journalDirectory, in FileHeader header)
    {
        LastTransactionId = header.LastSyncedTransactionId;
        NextPageNumber = header.NextPageNumber;
        RootTree = header.RootTree;

        JournalReplay.Walk(JournalEntryReader.ListFiles(journalDirectory), header, (in JournalEntryHeader entry, ReadOnlySpan<byte> payload, string path, long offset) =>
        {
            Apply(entry, payload, path, offset);
            return true;
        });
        return EntriesReplayed > 0;
    }

    private void Apply(in JournalEntryHeader entry, ReadOnlySpan<byte> payload, string path, long entryOffset)
    {
        var position = 0;
        for (var r = 0; r < entry.RecordCount; r++)
        {
            if (position + JournalRecordHeader.SizeBytes > payload.Length) ThrowBadRecord(path, entryOffset, -1);
            var record = Unsafe.ReadUnaligned<JournalRecordHeader>(ref MemoryMarshal.GetReference(payload[position..]));
            position += JournalRecordHeader.SizeBytes;
            var runBytes = (long)record.PageCount * PageLayout.PageSizeBytes;
            if (record.PageNumber < 2 || record.PageCount < 1 || record.PageNumber + record.PageCount > entry.NextPageNumber
                || record.DataSizeBytes < 0 || record.DataSizeBytes > payload.Length - position || record.DataSizeBytes > runBytes)
            {
                ThrowBadRecord(path, entryOffset, record.PageNumber);
            }
            var data = payload.Slice(position, (int)record.DataSizeBytes);
            position += (int)record.DataSizeBytes;
            switch (record.Kind)
            {
                case JournalRecordKind.Diff when record.PageCount == 1:
                    PageDiff.Apply(GetForDiff(record.PageNumber), data, path, record.PageNumber, entryOffset);
                    break;
                case JournalRecordKind.DiffFromZero when record.PageCount == 1:
                    PageDiff.Apply(Replace(record.PageNumber, 1), data, path, record.PageNumber, entryOffset);
                    break;
                case JournalRecordKind.Full:
                    data.CopyTo(new Span<byte>(Replace(record.PageNumber, record.PageCount), data.Length));
                    break;
                default:
                    ThrowBadRecord(path, entryOffset, record.PageNumber);
                    break;
            }
        }
        if (position != payload.Length) ThrowBadRecord(path, entryOffset, -1);
        LastTransactionId = entry.TransactionId;
        NextPageNumber = entry.NextPageNumber;
        RootTree = entry.RootTree;
        EntriesReplayed++;
    }

    private byte* GetForDiff(long pageNumber)
    {
        if (_pages.TryGetValue(pageNumber, out var image))
        {
            image.Sequence = ++_sequence;
            _pages[pageNumber] = image;
            return image.Buffer.Pointer;
        }
        var buffer = new ScratchBuffer(1);
        var span = new Span<byte>(buffer.Pointer, PageLayout.PageSizeBytes);
        span.Clear();
        if (pageNumber * PageLayout.PageSizeBytes < RandomAccess.GetLength(_dataFile.Handle))
        {
            _dataFile.Read(pageNumber * PageLayout.PageSizeBytes, span);
        }
        _pages[pageNumber] = new PageImage(buffer, ++_sequence);
        return buffer.Pointer;
    }

    private byte* Replace(long pageNumber, int pageCount)
    {
        // A run replaces the pages it covers: they were freed before the run was allocated.
        for (var p = pageNumber; p < pageNumber + pageCount; p++)
        {
            if (_pages.Remove(p, out var old)) old.Buffer.Release();
        }
        var buffer = new ScratchBuffer(pageCount);
        new Span<byte>(buffer.Pointer, checked((int)Math.Min(buffer.SizeBytes, int.MaxValue))).Clear();
        _pages[pageNumber] = new PageImage(buffer, ++_sequence);
        return buffer.Pointer;
    }

    /// <summary>Writes the replayed pages (latest-touched last, so newer content wins where records overlapped), then syncs.</summary>
    public void WritePages()
    {
        var images = _pages.ToList();
        images.Sort((a, b) => a.Value.Sequence.CompareTo(b.Value.Sequence));
        long end = 0;
        foreach (var (page, image) in images) end = Math.Max(end, page + image.Buffer.PageCount);
        _dataFile.EnsurePageCount(Math.Max(end, NextPageNumber));
        var single = new List<(long, ScratchBuffer)>(1);
        foreach (var (page, image) in images)
        {
            single.Clear();
            single.Add((page, image.Buffer));
            _dataFile.WriteSorted(single);
        }
        PagesWritten = images.Count;
        _dataFile.Sync();
    }

    private static void ThrowBadRecord(string path, long entryOffset, long pageNumber) =>
        throw new StorageCorruptedException("A journal entry with a valid checksum holds an impossible page record.", path, pageNumber, entryOffset);

    public void Dispose()
    {
        foreach (var image in _pages.Values) image.Buffer.Release();
        _pages.Clear();
    }

    private record struct PageImage(ScratchBuffer Buffer, long Sequence);
}
