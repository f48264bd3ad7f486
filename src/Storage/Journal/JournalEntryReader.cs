using System.IO.Compression;
using System.Runtime.CompilerServices;
using Microsoft.Win32.SafeHandles;
using Storage.Paging;
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
        try
        {
            _handle = File.OpenHandle(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw FileIo.Translate(e, "open", path);
        }
        LengthBytes = RandomAccess.GetLength(_handle);
    }

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
        entrySizeBytes = 0;
        header = default;
        if (offsetBytes + JournalEntryHeader.SizeBytes > LengthBytes) return false;
        var headerBytes = new Span<byte>(_buffer.Pointer, JournalEntryHeader.SizeBytes);
        if (FileIo.Read(_handle, Path, headerBytes, offsetBytes) < JournalEntryHeader.SizeBytes) return false;
        header = Unsafe.Read<JournalEntryHeader>(_buffer.Pointer);
        if (header.Marker != JournalEntryHeader.ExpectedMarker || header.EnvironmentId != environmentId) return false;
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
        if (header.Checksum != JournalEntryBuilder.ComputeChecksum(_buffer.Pointer, header.PayloadSizeBytes, header.TransactionId)) return false;

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

    /// <summary>Whether a valid entry of this environment newer than <paramref name="afterTransactionId"/> starts at any 4 KiB boundary at or after <paramref name="fromOffsetBytes"/>.</summary>
    public bool HasLaterValidEntry(long fromOffsetBytes, ulong environmentId, long afterTransactionId)
    {
        Span<byte> probe = stackalloc byte[JournalEntryHeader.SizeBytes];
        for (var offset = AlignedBuffer.AlignUp(fromOffsetBytes); offset + JournalEntryHeader.SizeBytes <= LengthBytes; offset += AlignedBuffer.Alignment)
        {
            if (FileIo.Read(_handle, Path, probe, offset) < probe.Length) return false;
            var header = Unsafe.ReadUnaligned<JournalEntryHeader>(ref probe[0]);
            if (header.Marker != JournalEntryHeader.ExpectedMarker || header.TransactionId <= afterTransactionId) continue;
            if (TryRead(offset, environmentId, out var valid, out _, out _) && valid.TransactionId > afterTransactionId) return true;
        }
        return false;
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
        foreach (var path in Directory.EnumerateFiles(directory, "*" + JournalFile.Extension))
        {
            if (JournalFile.TryParseNumber(System.IO.Path.GetFileName(path), out var number)) files.Add((number, path));
        }
        files.Sort((a, b) => a.Item1.CompareTo(b.Item1));
        return files;
    }
}
