using System.IO.Compression;
using System.Runtime.CompilerServices;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
using Storage.Trees;

namespace Storage.Commit;

/// <summary>
/// Builds one journal entry in reusable aligned memory: records of page diffs (or whole runs for
/// overflow values), optionally compressed, checksummed, padded to 4 KiB.
/// </summary>
internal sealed unsafe class JournalEntryBuilder : IDisposable
{
    private const int KeepCapacityBytes = 16 << 20;
    private const int FullPageThresholdBytes = PageLayout.PageSizeBytes - 64;

    private readonly AlignedBuffer _entry = new(1 << 20);
    private readonly AlignedBuffer _compressed = new(1 << 20);
    private long _position;
    private int _records;

    public JournalEntryBuilder(int compressionThresholdBytes)
    {
        Compression = new CompressionPolicy(compressionThresholdBytes);
    }

    public CompressionPolicy Compression { get; }

    public int RecordCount => _records;

    public long PayloadSizeBytes => _position - JournalEntryHeader.SizeBytes;

    public void Begin()
    {
        _position = JournalEntryHeader.SizeBytes;
        _records = 0;
    }

    /// <summary>Adds a page as its diff against <paramref name="baseline"/> (a zero page for new pages), or whole when the diff is not smaller.</summary>
    public void AddPage(long pageNumber, byte* current, byte* baseline, bool isNew)
    {
        _entry.EnsureCapacity(_position + JournalRecordHeader.SizeBytes + PageLayout.PageSizeBytes, _position);
        var dataStart = _position + JournalRecordHeader.SizeBytes;
        var output = new Span<byte>(_entry.Pointer + dataStart, PageLayout.PageSizeBytes);
        var size = PageDiff.Encode(current, baseline, output, FullPageThresholdBytes);
        var kind = isNew ? JournalRecordKind.DiffFromZero : JournalRecordKind.Diff;
        if (size < 0)
        {
            new ReadOnlySpan<byte>(current, PageLayout.PageSizeBytes).CopyTo(output);
            size = PageLayout.PageSizeBytes;
            kind = JournalRecordKind.Full;
        }
        WriteRecordHeader(pageNumber, 1, kind, size);
    }

    /// <summary>
    /// Stamps a changed page (<paramref name="transactionId"/> and its checksum) and adds it as its diff against
    /// <paramref name="baseline"/>, the version it was copied from, whose checksum must be right (it was checked when
    /// read from the data file, or stamped by its commit). The checksum is worked out from the baseline's and the changed
    /// bytes alone (<see cref="PageDiff.StampChecksum"/>), not by reading the whole page again; a page changed so much that
    /// it goes whole gets its checksum the plain way.
    /// </summary>
    /// <remarks>
    /// With <paramref name="writtenLines"/>, only the lines the transaction's writes recorded there are compared (see
    /// <see cref="PageDiff.Encode"/>); the header's line, where the stamp goes, is always among them.
    /// </remarks>
    public void AddStampedPage(long pageNumber, byte* current, byte* baseline, long transactionId, ulong* writtenLines = null)
    {
        var header = (PageHeader*)current;
        header->TransactionId = transactionId;
        var baselineChecksum = ((PageHeader*)baseline)->Checksum;
        // Every byte of the field differs from the baseline's, so one run of the diff holds all of it.
        header->Checksum = ~baselineChecksum;
        _entry.EnsureCapacity(_position + JournalRecordHeader.SizeBytes + PageLayout.PageSizeBytes, _position);
        var dataStart = _position + JournalRecordHeader.SizeBytes;
        var data = _entry.Pointer + dataStart;
        if (writtenLines != null) WrittenLines.Mark(writtenLines, 0, PageLayout.HeaderSizeBytes);
        var output = new Span<byte>(data, PageLayout.PageSizeBytes);
        var size = PageDiff.Encode(current, baseline, output, FullPageThresholdBytes, writtenLines);
        if (CheckWrittenLines && writtenLines != null) CheckAgainstWholePage(pageNumber, current, baseline, output, size);
        if (size < 0)
        {
            header->Checksum = Crc32C.ComputePage(current, PageLayout.PageSizeBytes);
            Buffer.MemoryCopy(current, data, PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
            WriteRecordHeader(pageNumber, 1, JournalRecordKind.Full, PageLayout.PageSizeBytes);
            return;
        }
        header->Checksum = PageDiff.StampChecksum(data, size, baseline, baselineChecksum);
        WriteRecordHeader(pageNumber, 1, JournalRecordKind.Diff, size);
    }

    /// <summary>
    /// Whether each diff made from recorded lines is checked against a comparison of the whole page (tests turn this on:
    /// a write that did not record its bytes would leave them out of the journal).
    /// </summary>
    internal static bool CheckWrittenLines { get; set; }

    private byte[]? _checkBuffer;

    private void CheckAgainstWholePage(long pageNumber, byte* current, byte* baseline, ReadOnlySpan<byte> diff, int size)
    {
        _checkBuffer ??= new byte[PageLayout.PageSizeBytes];
        var whole = PageDiff.Encode(current, baseline, _checkBuffer, FullPageThresholdBytes);
        if (whole == size && (size < 0 || diff[..size].SequenceEqual(_checkBuffer.AsSpan(0, size)))) return;
        throw new InvalidOperationException($"Page {pageNumber} changed outside the lines its writes recorded ({size} bytes of diff from them, {whole} from the whole page).");
    }

    /// <summary>Appends the records another builder made (<see cref="DiffHelper"/>'s part of this entry).</summary>
    public void AddRecordsOf(JournalEntryBuilder part)
    {
        var bytes = part.PayloadSizeBytes;
        if (bytes == 0) return;
        _entry.EnsureCapacity(_position + bytes, _position);
        Buffer.MemoryCopy(part._entry.Pointer + JournalEntryHeader.SizeBytes, _entry.Pointer + _position, bytes, bytes);
        _lastRecord = _position + part._lastRecord - JournalEntryHeader.SizeBytes;
        _position += bytes;
        _records += part._records;
    }

    /// <summary>Adds the leading <paramref name="usedBytes"/> of a run of pages (an overflow value); the rest of the run is zero.</summary>
    public void AddRun(long pageNumber, int pageCount, byte* data, long usedBytes)
    {
        _entry.EnsureCapacity(_position + JournalRecordHeader.SizeBytes + usedBytes, _position);
        Buffer.MemoryCopy(data, _entry.Pointer + _position + JournalRecordHeader.SizeBytes, usedBytes, usedBytes);
        WriteRecordHeader(pageNumber, pageCount, JournalRecordKind.Full, usedBytes);
    }

    /// <summary>The kind and data of the record added last (for tests).</summary>
    internal JournalRecordKind LastRecord(out ReadOnlySpan<byte> data)
    {
        var header = Unsafe.Read<JournalRecordHeader>(_entry.Pointer + _lastRecord);
        data = new ReadOnlySpan<byte>(_entry.Pointer + _lastRecord + JournalRecordHeader.SizeBytes, checked((int)header.DataSizeBytes));
        return header.Kind;
    }

    private long _lastRecord;

    private void WriteRecordHeader(long pageNumber, int pageCount, JournalRecordKind kind, long dataSizeBytes)
    {
        _lastRecord = _position;
        Unsafe.Write(_entry.Pointer + _position, new JournalRecordHeader
        {
            PageNumber = pageNumber,
            PageCount = pageCount,
            Kind = kind,
            DataSizeBytes = dataSizeBytes,
        });
        _position += JournalRecordHeader.SizeBytes + dataSizeBytes;
        _records++;
    }

    /// <summary>Completes the entry; returns the aligned buffer and its length (a multiple of 4 KiB).</summary>
    public (IntPtr Pointer, long LengthBytes) Finish(ulong environmentId, long transactionId, long nextPageNumber, in TreeHeader rootTree, int sharedFileStamp = 0)
    {
        var payload = PayloadSizeBytes;
        var target = _entry;
        var flags = 0;
        var stored = payload;
        if (TryCompress(payload, out var compressedSize))
        {
            target = _compressed;
            flags = JournalEntryHeader.CompressedFlag;
            stored = compressedSize;
        }

        var total = AlignedBuffer.AlignUp(JournalEntryHeader.SizeBytes + stored);
        target.EnsureCapacity(total, JournalEntryHeader.SizeBytes + stored);
        var header = new JournalEntryHeader
        {
            Marker = JournalEntryHeader.ExpectedMarker,
            EnvironmentId = environmentId,
            TransactionId = transactionId,
            PayloadSizeBytes = stored,
            UncompressedSizeBytes = payload,
            NextPageNumber = nextPageNumber,
            RecordCount = _records,
            Flags = flags,
            RootTree = rootTree,
            SharedFileStamp = sharedFileStamp,
        };
        Unsafe.Write(target.Pointer, header);
        new Span<byte>(target.Pointer + JournalEntryHeader.SizeBytes + stored, (int)(total - JournalEntryHeader.SizeBytes - stored)).Clear();
        ((JournalEntryHeader*)target.Pointer)->Checksum = ComputeChecksum(target.Pointer, stored, transactionId);
        return ((IntPtr)target.Pointer, total);
    }

    public static uint ComputeChecksum(byte* entry, long storedPayloadBytes, long transactionId)
    {
        var state = Crc32C.Start(Crc32C.Seed(transactionId));
        state = Crc32C.Append(state, new ReadOnlySpan<byte>(entry, JournalEntryHeader.ChecksumOffset));
        state = Crc32C.Append(state, stackalloc byte[4]);
        state = Crc32C.Append(state, new ReadOnlySpan<byte>(entry + JournalEntryHeader.ChecksumOffset + 4, JournalEntryHeader.SizeBytes - JournalEntryHeader.ChecksumOffset - 4));
        state = Crc32C.Append(state, entry + JournalEntryHeader.SizeBytes, storedPayloadBytes);
        return Crc32C.Finish(state);
    }

    private bool TryCompress(long payload, out long compressedSize)
    {
        compressedSize = 0;
        if (payload > int.MaxValue / 2 || !Compression.ShouldCompress(payload)) return false;
        // Kept only if it saves at least a 4 KiB block: the entry is padded to blocks anyway.
        var limit = payload - AlignedBuffer.Alignment;
        if (limit <= 0) return false;
        _compressed.EnsureCapacity(JournalEntryHeader.SizeBytes + limit + AlignedBuffer.Alignment, 0);
        var source = new ReadOnlySpan<byte>(_entry.Pointer + JournalEntryHeader.SizeBytes, (int)payload);
        var destination = new Span<byte>(_compressed.Pointer + JournalEntryHeader.SizeBytes, (int)limit);
        var started = CompressionPolicy.Now();
        var compressed = BrotliEncoder.TryCompress(source, destination, out var written, quality: 1, window: 22) && written < limit;
        Compression.RecordCompression(payload, compressed ? written : payload, CompressionPolicy.Now() - started);
        if (!compressed) return false;
        compressedSize = written;
        return true;
    }

    /// <summary>Drops memory kept from an unusually large transaction.</summary>
    public void Trim()
    {
        if (_entry.Capacity > KeepCapacityBytes) _entry.ShrinkTo(KeepCapacityBytes);
        if (_compressed.Capacity > KeepCapacityBytes) _compressed.ShrinkTo(KeepCapacityBytes);
    }

    public void Dispose()
    {
        _entry.Dispose();
        _compressed.Dispose();
    }
}
