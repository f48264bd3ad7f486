using System.Buffers.Binary;
using System.Runtime.InteropServices;
using Storage.Paging;
using Storage.Platform;
using Storage.Trees;

namespace Storage.Backup;

/// <summary>
/// The byte layout of a backup stream: one header, blocks of pages, one trailer, every part with its own CRC-32C.
/// </summary>
/// <remarks>
/// <para><b>Header</b> (<see cref="HeaderBytes"/>): the magic <c>STORBKUP</c>, the stream format version, the kind
/// (full), the page size, the environment id, the transaction the backup is of, the next page number and the tree of
/// tree names of that state, the data file's format version, when the backup began (UTC ticks), and the CRC-32C of the
/// bytes before it.</para>
/// <para><b>Block</b>: the magic <c>PAGE</c>, how many consecutive pages follow (1 to <see cref="MaxPagesPerBlock"/>),
/// its sequence number (0, 1, ...), the first page number, the CRC-32C of those fields and the pages; then the pages. Blocks go up in page number and never overlap.</para>
/// <para>An incremental backup has the same header (kind incremental, the transaction it starts after in the field
/// that follows the time) and blocks of the magic <c>ENTR</c>: each one journal entry as the journal stored it, its
/// length where a page block has its page count and its transaction where a page block has its first page.</para>
/// <para><b>Trailer</b> (<see cref="TrailerBytes"/>): the magic <c>BKUPEND.</c>, the number of blocks and of pages,
/// the CRC-32C of all the blocks' CRCs in order, and its own CRC-32C. A stream without a valid trailer is incomplete
/// (a backup cancelled or cut short) and is refused.</para>
/// <para>All integers are little-endian.</para>
/// </remarks>
internal static class BackupFormat
{
    public const ulong HeaderMagic = 0x5055_4B42_524F_5453; // "STORBKUP"
    public const uint BlockMagic = 0x4547_4150; // "PAGE"
    public const ulong TrailerMagic = 0x2E44_4E45_5055_4B42; // "BKUPEND."
    public const int StreamFormatVersion = 1;
    public const int KindFull = 1;
    public const int KindIncremental = 2;
    public const uint EntryMagic = 0x5254_4E45; // "ENTR"

    public const int HeaderBytes = 160;
    public const int BlockHeaderBytes = 28;
    private const int BlockFieldsBytes = 24;
    public const int TrailerBytes = 40;
    public const int MaxPagesPerBlock = 64;

    /// <summary>What a backup stream's header says.</summary>
    /// <remarks>Kind is <see cref="KindFull"/> (pages) or <see cref="KindIncremental"/> (journal entries after BaseTransactionId).</remarks>
    internal readonly record struct Header(ulong EnvironmentId, long TransactionId, long NextPageNumber, TreeHeader RootTree, int DataFormatVersion, DateTime TakenAtUtc,
        int Kind = KindFull, long BaseTransactionId = 0);

    public static void WriteHeader(Span<byte> destination, in Header header)
    {
        var h = destination[..HeaderBytes];
        h.Clear();
        BinaryPrimitives.WriteUInt64LittleEndian(h, HeaderMagic);
        BinaryPrimitives.WriteInt32LittleEndian(h[8..], StreamFormatVersion);
        BinaryPrimitives.WriteInt32LittleEndian(h[12..], header.Kind);
        BinaryPrimitives.WriteInt32LittleEndian(h[16..], PageLayout.PageSizeBytes);
        BinaryPrimitives.WriteInt32LittleEndian(h[20..], header.DataFormatVersion);
        BinaryPrimitives.WriteUInt64LittleEndian(h[24..], header.EnvironmentId);
        BinaryPrimitives.WriteInt64LittleEndian(h[32..], header.TransactionId);
        BinaryPrimitives.WriteInt64LittleEndian(h[40..], header.NextPageNumber);
        BinaryPrimitives.WriteInt64LittleEndian(h[48..], header.TakenAtUtc.Ticks);
        BinaryPrimitives.WriteInt64LittleEndian(h[56..], header.BaseTransactionId);
        var root = header.RootTree;
        MemoryMarshal.AsBytes(new ReadOnlySpan<TreeHeader>(in root)).CopyTo(h[64..(64 + TreeHeader.SizeBytes)]);
        BinaryPrimitives.WriteUInt32LittleEndian(h[(HeaderBytes - 4)..], Crc32C.Compute(h[..(HeaderBytes - 4)]));
    }

    /// <summary>Parses a header; the reason it is not one otherwise.</summary>
    public static bool TryReadHeader(ReadOnlySpan<byte> h, out Header header, out string? problem)
    {
        header = default;
        if (h.Length < HeaderBytes)
        {
            problem = $"the stream ends after {h.Length} bytes, inside the {HeaderBytes}-byte header";
            return false;
        }
        if (BinaryPrimitives.ReadUInt64LittleEndian(h) != HeaderMagic)
        {
            problem = "it does not start with a backup header (wrong magic): not a backup of this engine";
            return false;
        }
        if (BinaryPrimitives.ReadUInt32LittleEndian(h[(HeaderBytes - 4)..]) != Crc32C.Compute(h[..(HeaderBytes - 4)]))
        {
            problem = "the backup header's checksum does not match";
            return false;
        }
        var version = BinaryPrimitives.ReadInt32LittleEndian(h[8..]);
        if (version != StreamFormatVersion)
        {
            problem = $"the backup stream format is version {version}; this library reads version {StreamFormatVersion}";
            return false;
        }
        var kind = BinaryPrimitives.ReadInt32LittleEndian(h[12..]);
        var pageSize = BinaryPrimitives.ReadInt32LittleEndian(h[16..]);
        if (kind is not (KindFull or KindIncremental) || pageSize != PageLayout.PageSizeBytes)
        {
            problem = $"the backup is of kind {kind} with {pageSize}-byte pages; this library restores full and incremental backups of {PageLayout.PageSizeBytes}-byte pages";
            return false;
        }
        var root = MemoryMarshal.Read<TreeHeader>(h[64..(64 + TreeHeader.SizeBytes)]);
        header = new Header(BinaryPrimitives.ReadUInt64LittleEndian(h[24..]), BinaryPrimitives.ReadInt64LittleEndian(h[32..]),
            BinaryPrimitives.ReadInt64LittleEndian(h[40..]), root, BinaryPrimitives.ReadInt32LittleEndian(h[20..]),
            new DateTime(Math.Clamp(BinaryPrimitives.ReadInt64LittleEndian(h[48..]), DateTime.MinValue.Ticks, DateTime.MaxValue.Ticks), DateTimeKind.Utc),
            kind, BinaryPrimitives.ReadInt64LittleEndian(h[56..]));
        if (kind == KindIncremental && (header.BaseTransactionId < 0 || header.TransactionId < header.BaseTransactionId))
        {
            problem = $"the incremental backup's header says it runs from transaction {header.BaseTransactionId} to {header.TransactionId}";
            return false;
        }
        if (header.TransactionId < 0 || (kind == KindFull && (header.NextPageNumber < 2 || header.NextPageNumber > (1L << 40))))
        {
            problem = $"the backup header's numbers are impossible (transaction {header.TransactionId}, next page {header.NextPageNumber})";
            return false;
        }
        problem = null;
        return true;
    }

    /// <summary>A block's header, its pages already in place after it: the CRC covers the header fields and the pages.</summary>
    public static uint WriteBlockHeader(Span<byte> destination, long sequence, long firstPage, int pageCount, ReadOnlySpan<byte> pages, uint magic = BlockMagic)
    {
        BinaryPrimitives.WriteUInt32LittleEndian(destination, magic);
        BinaryPrimitives.WriteInt32LittleEndian(destination[4..], pageCount);
        BinaryPrimitives.WriteInt64LittleEndian(destination[8..], sequence);
        BinaryPrimitives.WriteInt64LittleEndian(destination[16..], firstPage);
        var crc = BlockCrc(destination, pages);
        BinaryPrimitives.WriteUInt32LittleEndian(destination[BlockFieldsBytes..], crc);
        return crc;
    }

    /// <summary>Reads a block's header: (magic ok, page count, sequence, first page, stored CRC).</summary>
    public static (bool MagicOk, int PageCount, long Sequence, long FirstPage, uint Crc) ReadBlockHeader(ReadOnlySpan<byte> b, uint magic = BlockMagic) =>
        (BinaryPrimitives.ReadUInt32LittleEndian(b) == magic, BinaryPrimitives.ReadInt32LittleEndian(b[4..]), BinaryPrimitives.ReadInt64LittleEndian(b[8..]),
            BinaryPrimitives.ReadInt64LittleEndian(b[16..]), BinaryPrimitives.ReadUInt32LittleEndian(b[BlockFieldsBytes..]));

    /// <summary>The CRC of a block: its header fields (magic, count, sequence, first page) and then its pages.</summary>
    public static uint BlockCrc(ReadOnlySpan<byte> blockHeader, ReadOnlySpan<byte> pages) =>
        Crc32C.Finish(Crc32C.Append(Crc32C.Append(Crc32C.Start(0), blockHeader[..BlockFieldsBytes]), pages));

    /// <summary>Whether these bytes start like a trailer (the magic), rather than a block.</summary>
    public static bool IsTrailer(ReadOnlySpan<byte> bytes) => bytes.Length >= 8 && BinaryPrimitives.ReadUInt64LittleEndian(bytes) == TrailerMagic;

    /// <summary>Reads a trailer: (checksum ok, blocks, pages, CRC of the blocks' CRCs).</summary>
    public static (bool Ok, long Blocks, long Pages, uint BlockCrcs) ReadTrailer(ReadOnlySpan<byte> t) =>
        (BinaryPrimitives.ReadUInt32LittleEndian(t[(TrailerBytes - 4)..]) == Crc32C.Compute(t[..(TrailerBytes - 4)]),
            BinaryPrimitives.ReadInt64LittleEndian(t[8..]), BinaryPrimitives.ReadInt64LittleEndian(t[16..]), BinaryPrimitives.ReadUInt32LittleEndian(t[24..]));

    public static void WriteTrailer(Span<byte> destination, long blocks, long pages, uint blockCrcs)
    {
        var t = destination[..TrailerBytes];
        t.Clear();
        BinaryPrimitives.WriteUInt64LittleEndian(t, TrailerMagic);
        BinaryPrimitives.WriteInt64LittleEndian(t[8..], blocks);
        BinaryPrimitives.WriteInt64LittleEndian(t[16..], pages);
        BinaryPrimitives.WriteUInt32LittleEndian(t[24..], blockCrcs);
        BinaryPrimitives.WriteUInt32LittleEndian(t[(TrailerBytes - 4)..], Crc32C.Compute(t[..(TrailerBytes - 4)]));
    }

    /// <summary>Folds one block's CRC into the running CRC of all blocks.</summary>
    public static uint FoldBlockCrc(uint running, uint blockCrc)
    {
        Span<byte> bytes = stackalloc byte[4];
        BinaryPrimitives.WriteUInt32LittleEndian(bytes, blockCrc);
        return Crc32C.Append(running, bytes);
    }
}
