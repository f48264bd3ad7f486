using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;
using Storage.Allocation;
using Storage.Commit;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
using Storage.Scratch;

namespace Storage.Recovery;

/// <summary>
/// The pages journal entries rebuild, in memory: each diff applied over the page's data-file version (or over
/// what earlier entries rebuilt), new pages and overflow runs whole. Shared by recovery (which then writes the
/// pages to the data file) and the read-only snapshot (which reads through them).
/// </summary>
/// <remarks>
/// A diff carries only the changed bytes, so the base page it lands on is not verified while it is applied: a
/// flush may have left it half-written, which the diffs repair. Every page record's transaction stamped the page's
/// checksum and transaction id into the page before diffing it, so once all entries are applied each page must
/// match its own checksum again (<see cref="Verify"/>): a damaged byte outside a diff's changed ranges is reported,
/// never carried into the data file under a fresh checksum.
/// </remarks>
internal sealed unsafe class ReplayedPages : IDisposable
{
    private readonly SafeFileHandle _dataFile;
    private readonly string _dataPath;
    private readonly long _dataFileLengthBytes;
    private readonly Dictionary<long, PageImage> _byPage = [];
    private readonly List<PageImage> _images = [];

    public ReplayedPages(SafeFileHandle dataFile, string dataPath)
    {
        _dataFile = dataFile;
        _dataPath = dataPath;
        _dataFileLengthBytes = RandomAccess.GetLength(dataFile);
    }

    /// <summary>Pages rebuilt so far (an overflow run counts once).</summary>
    public int ImageCount => _images.Count(i => !i.Dead);

    /// <summary>One past the highest page any rebuilt image covers.</summary>
    public long PagesEnd => _images.Where(i => !i.Dead).Select(i => i.FirstPage + i.Buffer.PageCount).DefaultIfEmpty(0).Max();

    /// <summary>Whether any rebuilt image covers the page.</summary>
    public bool Contains(long pageNumber) => _byPage.ContainsKey(pageNumber);

    /// <summary>
    /// Applies one entry's records over the state whose next page number is <paramref name="previousNextPageNumber"/>.
    /// Checks the entry and every record first, so an impossible entry changes nothing.
    /// </summary>
    public void Apply(in JournalEntryHeader entry, ReadOnlySpan<byte> payload, string path, long entryOffset, long previousNextPageNumber)
    {
        if (Storage.State.StateChecks.Problem(entry.NextPageNumber, entry.RootTree) is { } problem) ThrowBadRecord(path, entryOffset, -1, problem);
        if (entry.NextPageNumber - previousNextPageNumber > Storage.State.StateChecks.MaxGrowthPages(payload.Length))
        {
            ThrowBadRecord(path, entryOffset, -1, $"it moves the next page number from {previousNextPageNumber} to {entry.NextPageNumber}, more than its {payload.Length:N0} bytes of records can account for");
        }
        // The end moves down only over free pages at the end of the file (FreeSpaceMap.TrimTail), never into an earlier region.
        if (entry.NextPageNumber < previousNextPageNumber
            && entry.NextPageNumber < Allocation.FreeSpaceLayout.FirstUsablePage(Allocation.FreeSpaceLayout.RegionOf(previousNextPageNumber - 1)))
        {
            ThrowBadRecord(path, entryOffset, -1, $"it moves the next page number down from {previousNextPageNumber} to {entry.NextPageNumber}, past the start of the last region");
        }
        Validate(entry, payload, path, entryOffset);
        var position = 0;
        for (var r = 0; r < entry.RecordCount; r++)
        {
            var record = Unsafe.ReadUnaligned<JournalRecordHeader>(ref MemoryMarshal.GetReference(payload[position..]));
            position += JournalRecordHeader.SizeBytes;
            var data = payload.Slice(position, (int)record.DataSizeBytes);
            position += (int)record.DataSizeBytes;
            var source = new RecordSource(entry.TransactionId, path, entryOffset);
            switch (record.Kind)
            {
                case JournalRecordKind.Diff:
                    PageDiff.Apply(ForDiff(record.PageNumber, source), data, path, record.PageNumber, entryOffset);
                    break;
                case JournalRecordKind.DiffFromZero:
                    PageDiff.Apply(Replace(record.PageNumber, 1, source), data, path, record.PageNumber, entryOffset);
                    break;
                default:
                    data.CopyTo(new Span<byte>(Replace(record.PageNumber, record.PageCount, source), data.Length));
                    break;
            }
        }
    }

    private static void Validate(in JournalEntryHeader entry, ReadOnlySpan<byte> payload, string path, long entryOffset)
    {
        var position = 0;
        for (var r = 0; r < entry.RecordCount; r++)
        {
            if (position + JournalRecordHeader.SizeBytes > payload.Length) ThrowBadRecord(path, entryOffset, -1, "its record headers run past the payload");
            var record = Unsafe.ReadUnaligned<JournalRecordHeader>(ref MemoryMarshal.GetReference(payload[position..]));
            position += JournalRecordHeader.SizeBytes;
            var runBytes = (long)record.PageCount * PageLayout.PageSizeBytes;
            if (record.PageNumber < 2 || record.PageCount < 1 || record.PageNumber > entry.NextPageNumber - record.PageCount
                || record.DataSizeBytes < 0 || record.DataSizeBytes > payload.Length - position || record.DataSizeBytes > runBytes)
            {
                ThrowBadRecord(path, entryOffset, record.PageNumber, "a page record lies outside the file or the payload");
            }
            for (var p = record.PageNumber; p < record.PageNumber + record.PageCount; p++)
            {
                // Header slots are never written by a transaction; bitmap pages only one at a time.
                if (FreeSpaceLayout.IsReserved(p) && (record.PageCount > 1 || !FreeSpaceLayout.IsBitmapPage(p)))
                {
                    ThrowBadRecord(path, entryOffset, record.PageNumber, $"a page record covers reserved page {p}");
                }
            }
            var data = payload.Slice(position, (int)record.DataSizeBytes);
            position += (int)record.DataSizeBytes;
            switch (record.Kind)
            {
                case JournalRecordKind.Diff or JournalRecordKind.DiffFromZero:
                    if (record.PageCount != 1 || !PageDiff.IsWellFormed(data)) ThrowBadRecord(path, entryOffset, record.PageNumber, "a page diff does not fit the page");
                    break;
                case JournalRecordKind.Full:
                    if (!IsWholeRun(record, data)) ThrowBadRecord(path, entryOffset, record.PageNumber, "a whole-page record does not hold the page or overflow run it claims");
                    break;
                default:
                    ThrowBadRecord(path, entryOffset, record.PageNumber, $"a page record has the unknown kind {(int)record.Kind}");
                    break;
            }
        }
        if (position != payload.Length) ThrowBadRecord(path, entryOffset, -1, "the payload holds bytes after its last record");
    }

    /// <summary>
    /// A whole-page record is what the writer makes of it: one full page (a diff that did not pay), or an overflow run
    /// whose first page says its value size, stored up to the end of the value. Its page count follows from its data,
    /// so a small record cannot claim a run of billions of pages.
    /// </summary>
    private static bool IsWholeRun(in JournalRecordHeader record, ReadOnlySpan<byte> data)
    {
        if (data.Length < PageLayout.HeaderSizeBytes) return false;
        var header = MemoryMarshal.Read<PageHeader>(data);
        if (header.PageNumber != record.PageNumber) return false;
        if ((header.Flags & PageFlags.TypeMask) != PageFlags.Overflow) return record.PageCount == 1 && data.Length == PageLayout.PageSizeBytes;
        if (header.OverflowSizeBytes < 0) return false;
        var runPages = PageLayout.PagesForOverflow(header.OverflowSizeBytes);
        return runPages == record.PageCount && data.Length == Math.Min(runPages * PageLayout.PageSizeBytes, PageLayout.HeaderSizeBytes + (long)header.OverflowSizeBytes);
    }

    private byte* ForDiff(long pageNumber, RecordSource source)
    {
        if (_byPage.TryGetValue(pageNumber, out var image))
        {
            if (image.FirstPage != pageNumber) ThrowBadRecord(source.Path, source.EntryOffset, pageNumber, "a page diff lands inside an overflow run");
            Touch(image, source);
            return image.Buffer.Pointer;
        }
        var fresh = AddImage(pageNumber, 1, source);
        var span = new Span<byte>(fresh.Buffer.Pointer, PageLayout.PageSizeBytes);
        var offset = pageNumber * PageLayout.PageSizeBytes;
        var read = offset < _dataFileLengthBytes ? FileIo.Read(_dataFile, _dataPath, span, offset) : 0;
        span[read..].Clear();
        return fresh.Buffer.Pointer;
    }

    /// <summary>
    /// A new page or run replaces whatever covered its pages: they were freed before it was allocated. An older run
    /// that overlaps it was freed whole, so all of it is dropped.
    /// </summary>
    private byte* Replace(long pageNumber, int pageCount, RecordSource source)
    {
        for (var p = pageNumber; p < pageNumber + pageCount; p++)
        {
            if (_byPage.TryGetValue(p, out var old)) Drop(old);
        }
        var image = AddImage(pageNumber, pageCount, source);
        ClearAll(image.Buffer);
        return image.Buffer.Pointer;
    }

    private PageImage AddImage(long firstPage, int pageCount, RecordSource source)
    {
        var image = new PageImage(firstPage, new ScratchBuffer(pageCount)) { Source = source };
        _images.Add(image);
        for (var p = firstPage; p < firstPage + pageCount; p++) _byPage[p] = image;
        return image;
    }

    private static void Touch(PageImage image, RecordSource source) => image.Source = source;

    private void Drop(PageImage image)
    {
        for (var p = image.FirstPage; p < image.FirstPage + image.Buffer.PageCount; p++)
        {
            if (_byPage.TryGetValue(p, out var current) && ReferenceEquals(current, image)) _byPage.Remove(p);
        }
        image.Dead = true;
        image.Buffer.Release();
    }

    private static void ClearAll(ScratchBuffer buffer)
    {
        var p = buffer.Pointer;
        for (var remaining = buffer.SizeBytes; remaining > 0;)
        {
            var chunk = (int)Math.Min(remaining, 1 << 30);
            new Span<byte>(p, chunk).Clear();
            p += chunk;
            remaining -= chunk;
        }
    }

    /// <summary>
    /// Checks that every rebuilt page matches the checksum and transaction id its last record's transaction stamped
    /// into it. Throws <see cref="StorageCorruptedException"/> naming the first page that does not, or, with
    /// <paramref name="problems"/>, lists them all.
    /// </summary>
    public void Verify(List<StorageCorruptedException>? problems = null)
    {
        foreach (var image in _images)
        {
            if (image.Dead) continue;
            var header = (PageHeader*)image.Buffer.Pointer;
            string? what = null;
            if (header->PageNumber != image.FirstPage)
            {
                what = $"says it is page {header->PageNumber}";
            }
            else if (header->TransactionId != image.Source.TransactionId)
            {
                what = $"says transaction {header->TransactionId} wrote it";
            }
            else
            {
                var computed = Crc32C.ComputePage(image.Buffer.Pointer, image.Buffer.SizeBytes);
                if (computed != header->Checksum) what = $"does not match the checksum that transaction stamped (stored {header->Checksum:x8}, computed {computed:x8})";
            }
            if (what is null) continue;
            var error = new StorageCorruptedException(
                $"Page {image.FirstPage}, rebuilt from the journal up to transaction {image.Source.TransactionId} (journal {Path.GetFileName(image.Source.Path)} at offset {image.Source.EntryOffset}), {what}: the data file's copy of the page that the journal's diffs were applied to is damaged.",
                _dataPath, image.FirstPage, image.FirstPage * PageLayout.PageSizeBytes);
            if (problems is null) throw error;
            problems.Add(error);
        }
    }

    /// <summary>The rebuilt page, or null when the journal did not touch it (a page inside a run points into the run).</summary>
    public byte* TryGetPage(long pageNumber)
    {
        if (!_byPage.TryGetValue(pageNumber, out var image)) return null;
        return image.Buffer.Pointer + (pageNumber - image.FirstPage) * PageLayout.PageSizeBytes;
    }

    /// <summary>The rebuilt pages and runs sorted by page number (no two overlap: a new one drops what it covers).</summary>
    public List<(long PageNumber, ScratchBuffer Buffer)> SortedByPage()
    {
        var live = _images.Where(i => !i.Dead).Select(i => (i.FirstPage, i.Buffer)).ToList();
        live.Sort(static (a, b) => a.FirstPage.CompareTo(b.FirstPage));
        return live;
    }

    private static void ThrowBadRecord(string path, long entryOffset, long pageNumber, string what) =>
        throw new StorageCorruptedException($"A journal entry with a valid checksum is impossible: {what}.", path, pageNumber, entryOffset);

    public void Dispose()
    {
        foreach (var image in _images) image.Buffer.Release();
        _images.Clear();
        _byPage.Clear();
    }

    private readonly record struct RecordSource(long TransactionId, string Path, long EntryOffset);

    private sealed class PageImage(long firstPage, ScratchBuffer buffer)
    {
        public long FirstPage { get; } = firstPage;

        public ScratchBuffer Buffer { get; } = buffer;

        public RecordSource Source { get; set; }

        public bool Dead { get; set; }
    }
}
