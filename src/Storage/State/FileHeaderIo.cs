using System.Runtime.CompilerServices;
using Storage.Paging;
using Storage.Platform;

namespace Storage.State;

/// <summary>Reads and writes the two file header slots (pages 0 and 1).</summary>
internal static unsafe class FileHeaderIo
{
    public static void Write(DataFile file, in FileHeader header)
    {
        var slot = header.Sequence & 1;
        using var page = new AlignedBuffer(PageLayout.PageSizeBytes);
        new Span<byte>(page.Pointer, PageLayout.PageSizeBytes).Clear();
        var pageHeader = (PageHeader*)page.Pointer;
        pageHeader->PageNumber = slot;
        pageHeader->Flags = PageFlags.FileHeader;
        var copy = header;
        copy.Checksum = 0;
        copy.Checksum = Crc32C.Compute(new ReadOnlySpan<byte>(&copy, FileHeader.SizeBytes));
        Unsafe.Write(page.Pointer + PageLayout.HeaderSizeBytes, copy);
        pageHeader->Checksum = Crc32C.ComputePage(page.Pointer, PageLayout.PageSizeBytes);
        file.Write(slot * PageLayout.PageSizeBytes, new ReadOnlySpan<byte>(page.Pointer, PageLayout.PageSizeBytes));
    }

    /// <summary>Reads one slot; null when it is not a valid header (torn, damaged, never written).</summary>
    public static FileHeader? TryRead(DataFile file, long slot, out string? problem)
    {
        Span<byte> page = stackalloc byte[PageLayout.PageSizeBytes];
        var read = file.Read(slot * PageLayout.PageSizeBytes, page);
        return TryParse(page[..read], slot, out problem);
    }

    public static FileHeader? TryParse(ReadOnlySpan<byte> page, long slot, out string? problem)
    {
        if (page.Length < PageLayout.PageSizeBytes)
        {
            problem = "the file ends inside the header page";
            return null;
        }
        fixed (byte* p = page)
        {
            var pageHeader = (PageHeader*)p;
            if (pageHeader->PageNumber != slot || pageHeader->Flags != PageFlags.FileHeader)
            {
                problem = "not a header page";
                return null;
            }
            if (pageHeader->Checksum != Crc32C.ComputePage(p, PageLayout.PageSizeBytes))
            {
                problem = "page checksum mismatch";
                return null;
            }
            var header = Unsafe.Read<FileHeader>(p + PageLayout.HeaderSizeBytes);
            var stored = header.Checksum;
            header.Checksum = 0;
            if (stored != Crc32C.Compute(new ReadOnlySpan<byte>(&header, FileHeader.SizeBytes)))
            {
                problem = "header checksum mismatch";
                return null;
            }
            header.Checksum = stored;
            if (header.Magic != FileHeader.ExpectedMagic)
            {
                problem = "not a Storage data file";
                return null;
            }
            problem = null;
            return header;
        }
    }
}
