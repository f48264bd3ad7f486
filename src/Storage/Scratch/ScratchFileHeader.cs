using System.Runtime.InteropServices;
using Storage.Platform;

namespace Storage.Scratch;

/// <summary>
/// The first bytes of a scratch file: what makes a file left by a crash provably this engine's, and this
/// environment's, so that opening the environment may delete it.
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = SizeBytes)]
internal struct ScratchFileHeader
{
    public const int SizeBytes = 64;

    /// <summary>"StScrtch" as a little-endian integer.</summary>
    public const ulong ExpectedMagic = 0x6863747263537453;

    public const int CurrentFormatVersion = 1;

    [FieldOffset(0)] public ulong Magic;

    [FieldOffset(8)] public int FormatVersion;

    /// <summary>The process that created the file (for people looking at one).</summary>
    [FieldOffset(12)] public int ProcessId;

    /// <summary>The environment (from its data file header) the file belongs to.</summary>
    [FieldOffset(16)] public ulong EnvironmentId;

    [FieldOffset(24)] public long CreatedUnixMs;

    [FieldOffset(32)] public long Reserved;

    /// <summary>CRC32C of the bytes before this field.</summary>
    [FieldOffset(40)] public uint Checksum;

    public const int ChecksumOffset = 40;

    public static ScratchFileHeader Create(ulong environmentId)
    {
        var header = new ScratchFileHeader
        {
            Magic = ExpectedMagic,
            FormatVersion = CurrentFormatVersion,
            ProcessId = Environment.ProcessId,
            EnvironmentId = environmentId,
            CreatedUnixMs = DateTimeOffset.UtcNow.ToUnixTimeMilliseconds(),
        };
        header.Checksum = header.ComputeChecksum();
        return header;
    }

    /// <summary>Whether <paramref name="bytes"/> start with a valid header of environment <paramref name="environmentId"/>.</summary>
    public static bool IsOwnedBy(ReadOnlySpan<byte> bytes, ulong environmentId)
    {
        if (bytes.Length < SizeBytes) return false;
        var header = MemoryMarshal.Read<ScratchFileHeader>(bytes);
        return header.Magic == ExpectedMagic
            && header.FormatVersion == CurrentFormatVersion
            && header.EnvironmentId == environmentId
            && header.Checksum == header.ComputeChecksum();
    }

    private readonly uint ComputeChecksum() =>
        Crc32C.Compute(MemoryMarshal.AsBytes(new ReadOnlySpan<ScratchFileHeader>(in this))[..ChecksumOffset]);
}
