using System.IO.Compression;
using System.Runtime.CompilerServices;
using Microsoft.Win32.SafeHandles;
using Storage.Commit;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>Reads and verifies journal entries from one file (recovery and the inspection tool).</summary>
internal sealed unsafe class JournalEntryReader : IDisposable
{
    /// <summary>No entry can claim more than this; a larger size in a header is damage, not an allocation to try.</summary>
    private const long MaxEntryBytes = 1L << 36;

    private readonly SafeFileHandle _handle;
    private readonly AlignedBuffer _buffer = new(1 << 20);
    private readonly AlignedBuffer _decompressed = new(1 << 20);

    public JournalEntryReader(string path, long number)
    {
        Path = path;
        Number = number;
        _handle = JournalFiles.OpenRead(path);
        LengthBytes = RandomAccess.GetLength(_handle);
    }

    /// <summary>The file's header block (null, with the reason, when it has no valid header).</summary>
    public JournalFileHeader? ReadFileHeader(out string? problem) => JournalFiles.ReadHeader(_handle, Path, out _, out problem);

    /// <summary>
    /// The stamp every entry of a recycled shared file carries (<see cref="JournalEntryHeader.SharedFileStamp"/>), or null
    /// where any stamp goes: the stale entries of the file's earlier use are valid entries too, of members that have since
    /// synced them, and only their stamp tells them apart.
    /// </summary>
    private int? RequiredStamp
    {
        get
        {
            if (!_stampRead)
            {
                _requiredStamp = ReadFileHeader(out _) is { IsShared: true, IsRecycled: true } h ? JournalEntryHeader.StampOf(h.FileNumber) : null;
                _stampRead = true;
            }
            return _requiredStamp;
        }
    }

    private int? _requiredStamp;
    private bool _stampRead;

    /// <summary>Whether an entry with <paramref name="stamp"/> can belong to the file's present use (any can, unless it is a recycled shared file).</summary>
    public bool IsOfPresentUse(int stamp) => RequiredStamp is not { } required || stamp == required;

    /// <summary>
    /// Whether the block holds a group end marker (valid or not) left by an earlier use of a recycled shared file: one whose
    /// writer's number is not the file's present one.
    /// </summary>
    public bool IsStaleGroupEndMarker(ReadOnlySpan<byte> block) =>
        JournalGroupEndMarker.WriterFileNumber(block) is { } number && !IsOfPresentUse(JournalEntryHeader.StampOf(number));

    public string Path { get; }

    public long Number { get; }

    public long LengthBytes { get; }

    /// <summary>
    /// Reads the entry at <paramref name="offsetBytes"/> if it is whole and valid for this environment.
    /// The returned header and payload (decompressed) stay valid until the next call.
    /// </summary>
    public bool TryRead(long offsetBytes, ulong environmentId, out JournalEntryHeader header, out ReadOnlySpan<byte> payload, out long entrySizeBytes)
    {
        payload = default;
        if (!TryReadHeaderAndChecksum(offsetBytes, environmentId, out header, out entrySizeBytes)) return false;
        if (!header.IsCompressed)
        {
            if (header.UncompressedSizeBytes != header.PayloadSizeBytes) return false;
            payload = header.PayloadSizeBytes <= int.MaxValue ? new ReadOnlySpan<byte>(_buffer.Pointer + JournalEntryHeader.SizeBytes, (int)header.PayloadSizeBytes) : throw TooLarge(offsetBytes);
            return true;
        }
        if (header.UncompressedSizeBytes > int.MaxValue) throw TooLarge(offsetBytes);
        _decompressed.EnsureCapacity(header.UncompressedSizeBytes, 0);
        var source = new ReadOnlySpan<byte>(_buffer.Pointer + JournalEntryHeader.SizeBytes, (int)header.PayloadSizeBytes);
        var target = new Span<byte>(_decompressed.Pointer, (int)header.UncompressedSizeBytes);
        if (!BrotliDecoder.TryDecompress(source, target, out var written) || written != header.UncompressedSizeBytes)
        {
            throw new StorageCorruptedException("A journal entry with a valid checksum does not decompress to its stated size.", Path, offsetBytes: offsetBytes);
        }
        payload = target;
        return true;
    }

    /// <summary>
    /// Reads the entry at <paramref name="offsetBytes"/> if it is whole and valid for this environment, as stored: its
    /// header and its payload (compressed or not), for copying it elsewhere. Valid until the next call.
    /// </summary>
    public bool TryReadStored(long offsetBytes, ulong environmentId, out JournalEntryHeader header, out ReadOnlySpan<byte> stored, out long entrySizeBytes)
    {
        stored = default;
        if (!TryReadHeaderAndChecksum(offsetBytes, environmentId, out header, out entrySizeBytes)) return false;
        stored = new ReadOnlySpan<byte>(_buffer.Pointer, checked((int)(JournalEntryHeader.SizeBytes + header.PayloadSizeBytes)));
        return true;
    }

    /// <summary>
    /// Whether a whole, valid entry of another environment than <paramref name="environmentId"/> starts at
    /// <paramref name="offsetBytes"/> (its checksum verified, its payload not decompressed): in a shared file, the entries
    /// of the group's other members, which a member's walk steps over.
    /// </summary>
    public bool TryReadForeign(long offsetBytes, ulong environmentId, out JournalEntryHeader header, out long entrySizeBytes) =>
        TryReadHeaderAndChecksum(offsetBytes, environmentId, out header, out entrySizeBytes, foreign: true);

    /// <summary>
    /// Reads the entry at <paramref name="offsetBytes"/> into the buffer and verifies its checksum, without decompressing it:
    /// an entry of <paramref name="environmentId"/>, or with <paramref name="foreign"/> one of any other environment.
    /// </summary>
    private bool TryReadHeaderAndChecksum(long offsetBytes, ulong environmentId, out JournalEntryHeader header, out long entrySizeBytes, bool foreign = false)
    {
        entrySizeBytes = 0;
        header = default;
        if (offsetBytes + JournalEntryHeader.SizeBytes > LengthBytes) return false;
        var headerBytes = new Span<byte>(_buffer.Pointer, JournalEntryHeader.SizeBytes);
        if (FileIo.Read(_handle, Path, headerBytes, offsetBytes) < JournalEntryHeader.SizeBytes) return false;
        header = Unsafe.Read<JournalEntryHeader>(_buffer.Pointer);
        if (header.Marker != JournalEntryHeader.ExpectedMarker || (header.EnvironmentId == environmentId) == foreign) return false;
        if (!IsOfPresentUse(header.SharedFileStamp)) return false;
        if (header.PayloadSizeBytes < 0 || header.UncompressedSizeBytes < 0 || header.RecordCount < 0) return false;
        if (header.PayloadSizeBytes > MaxEntryBytes || header.UncompressedSizeBytes > MaxEntryBytes) return false;
        entrySizeBytes = AlignedBuffer.AlignUp(JournalEntryHeader.SizeBytes + header.PayloadSizeBytes);
        if (offsetBytes + entrySizeBytes > LengthBytes) return false;

        var stored = JournalEntryHeader.SizeBytes + header.PayloadSizeBytes;
        _buffer.EnsureCapacity(stored, 0);
        for (long done = 0; done < stored;)
        {
            var chunk = (int)Math.Min(stored - done, 1 << 30);
            if (FileIo.Read(_handle, Path, new Span<byte>(_buffer.Pointer + done, chunk), offsetBytes + done) < chunk) return false;
            done += chunk;
        }
        return header.Checksum == JournalEntryBuilder.ComputeChecksum(_buffer.Pointer, header.PayloadSizeBytes, header.TransactionId);
    }

    /// <summary>
    /// The valid entries of this environment newer than <paramref name="afterTransactionId"/> that start at a 4 KiB
    /// boundary at or after <paramref name="fromOffsetBytes"/>: what damage before them would cut off. Reads the file
    /// in large pieces and looks at each block's header before verifying a candidate whole.
    /// </summary>
    public void ScanLaterEntries(long fromOffsetBytes, ulong environmentId, long afterTransactionId, ref LaterEntries found)
    {
        const int ChunkBytes = 1 << 20;
        using var chunk = new AlignedBuffer(ChunkBytes);
        var offset = AlignedBuffer.AlignUp(fromOffsetBytes);
        while (offset + JournalEntryHeader.SizeBytes <= LengthBytes)
        {
            var length = (int)Math.Min(ChunkBytes, LengthBytes - offset);
            var read = FileIo.Read(_handle, Path, new Span<byte>(chunk.Pointer, length), offset);
            if (read < JournalEntryHeader.SizeBytes) return;
            var next = offset + (read & ~(AlignedBuffer.Alignment - 1));
            if (next == offset) return;
            if (found.FirstNonZeroOffset < 0)
            {
                var nonZero = new ReadOnlySpan<byte>(chunk.Pointer, read).IndexOfAnyExcept((byte)0);
                if (nonZero >= 0) found.FirstNonZeroOffset = offset + nonZero;
            }
            for (var at = 0L; at + JournalEntryHeader.SizeBytes <= read; at += AlignedBuffer.Alignment)
            {
                var header = Unsafe.ReadUnaligned<JournalEntryHeader>(chunk.Pointer + at);
                if (header.Marker != JournalEntryHeader.ExpectedMarker || header.EnvironmentId != environmentId || header.TransactionId <= afterTransactionId) continue;
                bool valid;
                long size;
                try
                {
                    valid = TryReadHeaderAndChecksum(offset + at, environmentId, out _, out size);
                }
                catch (StorageCorruptedException)
                {
                    valid = false;
                    size = 0;
                }
                if (!valid) continue;
                found.Add(header.TransactionId, Number);
                var end = offset + at + size;
                if (end > offset + read)
                {
                    next = end;
                    break;
                }
                at += size - AlignedBuffer.Alignment;
            }
            offset = next;
        }
    }

    /// <summary>Reads the 4 KiB block at <paramref name="offsetBytes"/> (less at the end of the file): where a group end marker would be.</summary>
    public ReadOnlySpan<byte> ReadBlock(long offsetBytes)
    {
        var span = new Span<byte>(_buffer.Pointer, JournalBlock.Bytes);
        var read = offsetBytes < LengthBytes ? FileIo.Read(_handle, Path, span, offsetBytes) : 0;
        return span[..read];
    }

    /// <summary>Reads the first 128 bytes at <paramref name="offsetBytes"/> (fewer at the end of the file).</summary>
    public ReadOnlySpan<byte> ReadBlockStart(long offsetBytes)
    {
        var span = new Span<byte>(_buffer.Pointer, JournalEntryHeader.SizeBytes);
        var read = offsetBytes < LengthBytes ? FileIo.Read(_handle, Path, span, offsetBytes) : 0;
        return span[..read];
    }

    private StorageCorruptedException TooLarge(long offset) =>
        new("A journal entry is larger than this reader can replay in one piece.", Path, offsetBytes: offset);

    public void Dispose()
    {
        _handle.Dispose();
        _buffer.Dispose();
        _decompressed.Dispose();
    }

    public static IReadOnlyList<(long Number, string Path)> ListFiles(string directory)
    {
        if (!Directory.Exists(directory)) return [];
        var files = new List<(long, string)>();
        try
        {
            foreach (var path in Directory.EnumerateFiles(directory, "*" + JournalFile.Extension))
            {
                if (JournalFile.TryParseNumber(System.IO.Path.GetFileName(path), out var number)) files.Add((number, path));
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw FileIo.Translate(e, "list", directory);
        }
        files.Sort((a, b) => a.Item1.CompareTo(b.Item1));
        return files;
    }
}

/// <summary>Valid entries found after a point of damage: what a strict open refuses to drop silently.</summary>
internal struct LaterEntries
{
    public LaterEntries()
    {
    }

    public int Count;

    /// <summary>Where the scan first met a byte that is not zero (valid entry or not), or -1.</summary>
    public long FirstNonZeroOffset = -1;

    public long FirstTransactionId;
    public long LastTransactionId;
    public long FirstFileNumber;
    public long LastFileNumber;

    public void Add(long transactionId, long fileNumber)
    {
        if (Count == 0)
        {
            FirstTransactionId = LastTransactionId = transactionId;
            FirstFileNumber = LastFileNumber = fileNumber;
        }
        else
        {
            FirstTransactionId = Math.Min(FirstTransactionId, transactionId);
            LastTransactionId = Math.Max(LastTransactionId, transactionId);
            FirstFileNumber = Math.Min(FirstFileNumber, fileNumber);
            LastFileNumber = Math.Max(LastFileNumber, fileNumber);
        }
        Count++;
    }
}
