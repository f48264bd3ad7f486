using System.Buffers.Binary;

namespace Storage.Tests.Support;

/// <summary>A file header slot as read from disk (format: a 32-byte page header, then the header struct).</summary>
internal readonly record struct HeaderSlot(int Slot, bool LooksValid, long Sequence, long LastSyncedTransactionId, long NextPageNumber, long JournalFileNumber, long JournalOffsetBytes);

/// <summary>Reads and damages the data file directly: 8 KiB pages, pages 0 and 1 are the file headers.</summary>
internal static class DataFileInspector
{
    public const int PageBytes = 8192;
    public const int PageHeaderBytes = 32;
    public const ushort LeafFlag = 1;
    public const ushort BranchFlag = 2;
    public const ushort OverflowFlag = 4;
    private const ulong HeaderMagic = 0x31454741_524F5453; // "STORAGE1"

    public static string PathOf(string environment) => System.IO.Path.Combine(environment, "data.storage");

    public static HeaderSlot ReadHeader(string environment, int slot)
    {
        var page = ReadPage(environment, slot);
        var header = page.AsSpan(PageHeaderBytes);
        var looksValid = BinaryPrimitives.ReadUInt64LittleEndian(header) == HeaderMagic;
        return new HeaderSlot(slot, looksValid,
            Sequence: BinaryPrimitives.ReadInt64LittleEndian(header[24..]),
            LastSyncedTransactionId: BinaryPrimitives.ReadInt64LittleEndian(header[32..]),
            NextPageNumber: BinaryPrimitives.ReadInt64LittleEndian(header[40..]),
            JournalFileNumber: BinaryPrimitives.ReadInt64LittleEndian(header[48..]),
            JournalOffsetBytes: BinaryPrimitives.ReadInt64LittleEndian(header[56..]));
    }

    /// <summary>The slot holding the header with the higher sequence.</summary>
    public static HeaderSlot NewerHeader(string environment)
    {
        var a = ReadHeader(environment, 0);
        var b = ReadHeader(environment, 1);
        return a.Sequence >= b.Sequence ? a : b;
    }

    public static HeaderSlot OlderHeader(string environment)
    {
        var a = ReadHeader(environment, 0);
        var b = ReadHeader(environment, 1);
        return a.Sequence >= b.Sequence ? b : a;
    }

    public static byte[] ReadPage(string environment, long pageNumber)
    {
        var page = new byte[PageBytes];
        using var handle = File.OpenHandle(PathOf(environment), FileMode.Open, FileAccess.Read, FileShare.ReadWrite);
        RandomAccess.Read(handle, page, pageNumber * PageBytes);
        return page;
    }

    public static long PageCount(string environment) => new FileInfo(PathOf(environment)).Length / PageBytes;

    /// <summary>Pages whose header says they are page N with the given type flag and belong to a user tree (tree id != 0).</summary>
    public static List<long> FindPages(string environment, ushort flag, bool userTreesOnly = true)
    {
        var found = new List<long>();
        var header = new byte[PageHeaderBytes];
        using var handle = File.OpenHandle(PathOf(environment), FileMode.Open, FileAccess.Read, FileShare.ReadWrite);
        var pages = RandomAccess.GetLength(handle) / PageBytes;
        for (long page = 2; page < pages; page++)
        {
            RandomAccess.Read(handle, header, page * PageBytes);
            if (BinaryPrimitives.ReadInt64LittleEndian(header) != page) continue;
            if (BinaryPrimitives.ReadUInt16LittleEndian(header.AsSpan(8)) != flag) continue;
            if (userTreesOnly && BinaryPrimitives.ReadInt32LittleEndian(header.AsSpan(24)) == 0) continue;
            found.Add(page);
        }
        return found;
    }

    public static void FlipByte(string environment, long offsetBytes)
    {
        using var handle = File.OpenHandle(PathOf(environment), FileMode.Open, FileAccess.ReadWrite);
        var one = new byte[1];
        RandomAccess.Read(handle, one, offsetBytes);
        one[0] ^= 0x5A;
        RandomAccess.Write(handle, one, offsetBytes);
    }

    /// <summary>
    /// Sets a page's free bit in its bitmap (region 0) and stamps the bitmap page's checksum again, as a bug in the
    /// engine would leave it: the checksums cannot see this.
    /// </summary>
    public static unsafe void MarkFree(string environment, long pageNumber)
    {
        const int bitmapOffset = 64;
        const int bitsPerBitmapPage = 32768;
        var bitmapPage = 2 + pageNumber / bitsPerBitmapPage;
        var page = ReadPage(environment, bitmapPage);
        var bit = (int)(pageNumber % bitsPerBitmapPage);
        page[bitmapOffset + bit / 8] |= (byte)(1 << (bit % 8));
        fixed (byte* p = page)
        {
            ((Storage.Paging.PageHeader*)p)->Checksum = Storage.Platform.Crc32C.ComputePage(p, PageBytes);
        }
        using var handle = File.OpenHandle(PathOf(environment), FileMode.Open, FileAccess.ReadWrite);
        RandomAccess.Write(handle, page, bitmapPage * PageBytes);
    }

    public static void Truncate(string environment, long lengthBytes)
    {
        using var handle = File.OpenHandle(PathOf(environment), FileMode.Open, FileAccess.ReadWrite);
        RandomAccess.SetLength(handle, lengthBytes);
    }

    public static byte[] Hash(string path) => System.Security.Cryptography.SHA256.HashData(File.ReadAllBytes(path));
}
