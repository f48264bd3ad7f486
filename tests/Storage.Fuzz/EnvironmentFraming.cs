using System.Buffers.Binary;
using System.Globalization;
using Storage.Journal;
using Storage.Paging;

namespace Storage.Fuzz;

/// <summary>
/// How one fuzz input describes an environment directory: the data file and journal files as sparse byte
/// chunks, so that an environment of a few MiB (mostly zeros) is an input of a few KiB.
/// <code>
/// input  = flags:u8 chunk*
/// chunk  = file:u8 offset:u32le length:u16le bytes[length]
/// </code>
/// File 0 is <c>data.storage</c>; file N (1..255) is journal number N in <c>Journals/</c>. A chunk writes its bytes
/// at the offset (the file grows with zeros to reach it); a chunk of length 0 sets the file's length to the offset
/// (truncating or extending it), so a file can end anywhere, including inside a page or an entry. A file no chunk
/// names does not exist. A chunk cut short by the end of the input keeps the bytes it has; offsets past
/// <see cref="MaxFileBytes"/> are dropped. Flags: bit 0 repairs checksums after assembly (<see cref="ChecksumRepair"/>);
/// bit 1 skips the read-only readers (checker and inspection tool), bit 2 skips opening the environment.
/// </summary>
internal sealed class EnvironmentFraming
{
    public const int MaxFileBytes = 4 << 20;
    public const byte RepairChecksumsFlag = 1;
    public const byte SkipReadersFlag = 2;
    public const byte SkipOpenFlag = 4;
    private const int ChunkHeaderBytes = 7;
    private const int MaxChunkBytes = ushort.MaxValue;
    /// <summary>Zero stretches shorter than this stay inside a chunk: a new chunk costs its header.</summary>
    private const int MinGapBytes = 16;

    public byte Flags { get; init; }

    /// <summary>File number (0 = data file) to contents.</summary>
    public SortedDictionary<int, byte[]> Files { get; } = [];

    public bool RepairChecksums => (Flags & RepairChecksumsFlag) != 0;

    public bool SkipReaders => (Flags & SkipReadersFlag) != 0;

    public bool SkipOpen => (Flags & SkipOpenFlag) != 0;

    public static EnvironmentFraming Decode(ReadOnlySpan<byte> input)
    {
        var framing = new EnvironmentFraming { Flags = input.IsEmpty ? (byte)0 : input[0] };
        var lengths = new Dictionary<int, int>();
        var chunks = new List<(int File, int Offset, int Start, int Length)>();
        var position = 1;
        while (position < input.Length)
        {
            var header = input[position..];
            if (header.Length < ChunkHeaderBytes) break;
            int file = header[0];
            var offset = BinaryPrimitives.ReadUInt32LittleEndian(header[1..]);
            int length = BinaryPrimitives.ReadUInt16LittleEndian(header[5..]);
            position += ChunkHeaderBytes;
            length = Math.Min(length, input.Length - position);
            var start = position;
            position += length;
            if (offset > MaxFileBytes) continue;
            var end = (int)Math.Min(offset + (long)length, MaxFileBytes);
            lengths.TryGetValue(file, out var current);
            if (length == 0) lengths[file] = (int)offset;
            else lengths[file] = Math.Max(current, end);
            chunks.Add((file, (int)offset, start, end - (int)offset));
        }
        foreach (var (file, length) in lengths) framing.Files[file] = new byte[length];
        // Chunks apply in input order, so a later chunk overwrites an earlier one; truncation applies at the end.
        foreach (var (file, offset, start, length) in chunks)
        {
            var contents = framing.Files[file];
            if (offset >= contents.Length) continue;
            input.Slice(start, Math.Min(length, contents.Length - offset)).CopyTo(contents.AsSpan(offset));
        }
        return framing;
    }

    /// <summary>The input that decodes to these files: every non-zero stretch as chunks, then each file's length.</summary>
    public byte[] Encode()
    {
        var output = new List<byte> { Flags };
        foreach (var (file, contents) in Files)
        {
            if (contents.Length > MaxFileBytes) throw new ArgumentException($"file {file} is {contents.Length} bytes, more than {MaxFileBytes}");
            var position = 0;
            while (position < contents.Length)
            {
                var next = contents.AsSpan(position).IndexOfAnyExcept((byte)0);
                if (next < 0) break;
                var start = position + next;
                var end = start;
                while (end < contents.Length && end - start < MaxChunkBytes)
                {
                    var zeros = contents.AsSpan(end).IndexOfAnyExcept((byte)0);
                    if (zeros == 0)
                    {
                        end++;
                        continue;
                    }
                    if (zeros < 0 || zeros >= MinGapBytes) break;
                    end += zeros;
                }
                end = Math.Min(end, start + MaxChunkBytes);
                AddChunk(output, file, start, contents.AsSpan(start, end - start));
                position = end;
            }
            AddChunk(output, file, contents.Length, []);
        }
        return [.. output];
    }

    /// <summary>Writes the files into <paramref name="directory"/> (which holds a <c>Journals</c> folder afterwards in any case).</summary>
    public void WriteTo(string directory)
    {
        var journals = Path.Combine(directory, Storage.State.StorageEnvironmentNames.JournalDirectory);
        Directory.CreateDirectory(journals);
        foreach (var (file, contents) in Files)
        {
            if (RepairChecksums)
            {
                if (file == 0) ChecksumRepair.RepairDataFile(contents);
                else ChecksumRepair.RepairJournal(contents);
            }
            File.WriteAllBytes(PathOf(directory, file), contents);
        }
    }

    /// <summary>Copies of <paramref name="other"/>'s files, under this framing's flags.</summary>
    public EnvironmentFraming WithFilesOf(EnvironmentFraming other)
    {
        foreach (var (file, contents) in other.Files) Files[file] = contents.ToArray();
        return this;
    }

    public static string PathOf(string directory, int file) => file == 0
        ? Path.Combine(directory, DataFile.FileName)
        : Path.Combine(directory, Storage.State.StorageEnvironmentNames.JournalDirectory, JournalFile.FileName(file));

    /// <summary>The framing of an environment directory as it is on disk (the data file and the journals numbered 1..255).</summary>
    public static EnvironmentFraming Read(string directory, byte flags)
    {
        var framing = new EnvironmentFraming { Flags = flags };
        var data = Path.Combine(directory, DataFile.FileName);
        if (File.Exists(data)) framing.Files[0] = File.ReadAllBytes(data);
        foreach (var (number, path) in JournalEntryReader.ListFiles(Path.Combine(directory, Storage.State.StorageEnvironmentNames.JournalDirectory)))
        {
            if (number is < 1 or > 255) throw new ArgumentException($"journal {number.ToString(CultureInfo.InvariantCulture)} cannot be framed (numbers 1..255 only)");
            framing.Files[(int)number] = File.ReadAllBytes(path);
        }
        return framing;
    }

    private static void AddChunk(List<byte> output, int file, int offset, ReadOnlySpan<byte> bytes)
    {
        Span<byte> header = stackalloc byte[ChunkHeaderBytes];
        header[0] = (byte)file;
        BinaryPrimitives.WriteUInt32LittleEndian(header[1..], (uint)offset);
        BinaryPrimitives.WriteUInt16LittleEndian(header[5..], (ushort)bytes.Length);
        output.AddRange(header);
        output.AddRange(bytes);
    }
}
