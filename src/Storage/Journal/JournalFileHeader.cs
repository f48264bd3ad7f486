using System.Runtime.InteropServices;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>
/// The first 4 KiB block of every journal file: whose file it is, its number and full size, and the transaction
/// its first entry carries. Written durably before the file is renamed into use, so a journal file that recovery
/// finds always says what it should hold: a file shorter than its size, or one whose number or environment
/// does not match its name and folder, is damage, not a torn tail.
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = SizeBytes)]
internal struct JournalFileHeader
{
    public const int SizeBytes = 64;

    /// <summary>The header block; entries start right after it.</summary>
    public const int BlockBytes = JournalBlock.Bytes;

    public const ulong ExpectedMagic = 0x4C49464A_47524F54; // "TORGJFIL"

    /// <summary>The format of a file of one environment.</summary>
    public const int CurrentFormatVersion = 2;

    /// <summary>
    /// The format of a shared file (<see cref="SharedFlag"/>): entries of several environments, group end markers. A
    /// library that reads only version 2 refuses such a file instead of stopping at the first entry of another environment.
    /// </summary>
    public const int SharedFormatVersion = 3;

    /// <summary>The file held entries before (it was recycled): stale bytes may follow its last entry.</summary>
    public const int RecycledFlag = 1;

    /// <summary>
    /// A journal file of an environment group: the root's writer puts the entries of every member into it, and each member
    /// with entries there has it hard-linked into its own journal folder under a number of its own. <see cref="EnvironmentId"/>,
    /// <see cref="FileNumber"/> and <see cref="FirstTransactionId"/> are the writing (root) environment's. It is never written
    /// again once its writer has closed, and it ends with a <see cref="JournalGroupEndMarker"/>. It is recycled only once no
    /// member has a name for it but the one recycling it; a recycled one (<see cref="RecycledFlag"/>) takes only the entries
    /// stamped with its number (<see cref="JournalEntryHeader.SharedFileStamp"/>).
    /// </summary>
    public const int SharedFlag = 2;

    [FieldOffset(0)] public ulong Magic;
    [FieldOffset(8)] public int FormatVersion;
    [FieldOffset(12)] public int Flags;
    [FieldOffset(16)] public ulong EnvironmentId;
    [FieldOffset(24)] public long FileNumber;
    [FieldOffset(32)] public long SizeBytesOfFile;

    /// <summary>The transaction id of the file's first entry (the file may hold none yet).</summary>
    [FieldOffset(40)] public long FirstTransactionId;

    /// <summary>CRC32C of this struct with the field zeroed.</summary>
    [FieldOffset(48)] public uint Checksum;

    [FieldOffset(52)] public int Reserved2;
    [FieldOffset(56)] public long Reserved3;

    public const int ChecksumOffset = 48;

    public readonly bool IsShared => (Flags & SharedFlag) != 0;

    public readonly bool IsRecycled => (Flags & RecycledFlag) != 0;

    public static JournalFileHeader Create(ulong environmentId, long fileNumber, long fileSizeBytes, long firstTransactionId, bool recycled, bool shared = false)
    {
        var header = new JournalFileHeader
        {
            Magic = ExpectedMagic,
            FormatVersion = shared ? SharedFormatVersion : CurrentFormatVersion,
            Flags = (recycled ? RecycledFlag : 0) | (shared ? SharedFlag : 0),
            EnvironmentId = environmentId,
            FileNumber = fileNumber,
            SizeBytesOfFile = fileSizeBytes,
            FirstTransactionId = firstTransactionId,
        };
        header.Checksum = header.ComputeChecksum();
        return header;
    }

    private readonly uint ComputeChecksum() => JournalBlock.Checksum(this, ChecksumOffset);

    /// <summary>Writes the header into a zeroed block of <see cref="BlockBytes"/>.</summary>
    public readonly unsafe void WriteBlock(byte* block) => JournalBlock.Write(this, block);

    /// <summary>Parses the first block of a journal file; null (with the reason) when it is not a valid header.</summary>
    public static JournalFileHeader? TryParse(ReadOnlySpan<byte> block, out string? problem)
    {
        if (block.Length < SizeBytes)
        {
            problem = "the file ends inside its header";
            return null;
        }
        var header = MemoryMarshal.Read<JournalFileHeader>(block);
        if (header.Magic != ExpectedMagic)
        {
            problem = header.Magic == 0 ? "the header block is zero" : "the file does not start with a journal file header";
            return null;
        }
        if (header.Checksum != header.ComputeChecksum())
        {
            problem = "journal file header checksum mismatch";
            return null;
        }
        if (header.FormatVersion is not (CurrentFormatVersion or SharedFormatVersion))
        {
            problem = $"journal format {header.FormatVersion}, this library reads {CurrentFormatVersion} and {SharedFormatVersion}";
            return null;
        }
        if (header.IsShared != (header.FormatVersion == SharedFormatVersion) || (header.Flags & ~(RecycledFlag | SharedFlag)) != 0)
        {
            problem = $"journal format {header.FormatVersion} with flags {header.Flags:x}: no such file";
            return null;
        }
        if (header.FileNumber < 0 || header.SizeBytesOfFile < BlockBytes * 2 || header.SizeBytesOfFile % AlignedBuffer.Alignment != 0 || header.FirstTransactionId < 1)
        {
            problem = "the journal file header describes an impossible file";
            return null;
        }
        problem = null;
        return header;
    }
}
