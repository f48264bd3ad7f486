using System.Buffers.Binary;
using Storage.Commit;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
using Storage.State;

namespace Storage.Fuzz;

/// <summary>
/// Recomputes the checksums of pages, file headers and journal entries after a fuzzer changed their bytes, so
/// that a mutation reaches the code behind the checksum test instead of stopping at it (a random change passes
/// a CRC once in four billion tries). The only place here that knows where checksums live: when the on-disk
/// format changes, this file changes with it.
/// </summary>
internal static unsafe class ChecksumRepair
{
    private const int PageSize = PageLayout.PageSizeBytes;

    /// <summary>A file header page (the first 8 KiB of <paramref name="page"/>): the header's own CRC, then the page's.</summary>
    public static void RepairFileHeaderPage(Span<byte> page)
    {
        if (page.Length < PageSize) return;
        var header = page.Slice(PageLayout.HeaderSizeBytes, FileHeader.SizeBytes);
        header.Slice(FileHeader.ChecksumOffset, 4).Clear();
        BinaryPrimitives.WriteUInt32LittleEndian(header[FileHeader.ChecksumOffset..], Crc32C.Compute(header));
        RepairPage(page[..PageSize]);
    }

    /// <summary>
    /// Every page of a data file that says it is itself: file headers in slots 0 and 1, and any other page with a
    /// type (an overflow run's checksum covers the whole run when the run fits the file; its other pages are value
    /// bytes and are left alone).
    /// </summary>
    public static void RepairDataFile(Span<byte> file)
    {
        var pages = file.Length / PageSize;
        for (var number = 0L; number < pages; number++)
        {
            var page = file.Slice((int)(number * PageSize), PageSize);
            var claimed = BinaryPrimitives.ReadInt64LittleEndian(page);
            var flags = (PageFlags)BinaryPrimitives.ReadUInt16LittleEndian(page[8..]);
            if (claimed != number || flags == PageFlags.None) continue;
            if (number < 2 && flags == PageFlags.FileHeader)
            {
                RepairFileHeaderPage(page);
                continue;
            }
            if ((flags & PageFlags.Overflow) != 0)
            {
                var size = BinaryPrimitives.ReadInt32LittleEndian(page[16..]);
                var runPages = size < 0 ? 1 : PageLayout.PagesForOverflow(size);
                if (runPages >= 1 && number + runPages <= pages)
                {
                    RepairPage(file.Slice((int)(number * PageSize), (int)(runPages * PageSize)));
                    number += runPages - 1;
                    continue;
                }
            }
            RepairPage(page);
        }
    }

    /// <summary>
    /// The file's header block, every end marker, and every entry of a journal file that starts at a 4 KiB boundary with
    /// the marker and whose payload fits the file.
    /// </summary>
    public static void RepairJournal(Span<byte> file)
    {
        for (var offset = 0; offset + JournalEntryHeader.SizeBytes <= file.Length; offset += AlignedBuffer.Alignment)
        {
            var entry = file[offset..];
            var magic = BinaryPrimitives.ReadUInt64LittleEndian(entry);
            if (magic == JournalFileHeader.ExpectedMagic)
            {
                RepairStruct(entry[..JournalFileHeader.SizeBytes], JournalFileHeader.ChecksumOffset);
                continue;
            }
            if (magic == JournalEndMarker.ExpectedMagic)
            {
                RepairStruct(entry[..JournalEndMarker.SizeBytes], JournalEndMarker.ChecksumOffset);
                continue;
            }
            if (magic != JournalEntryHeader.ExpectedMarker) continue;
            var payloadBytes = BinaryPrimitives.ReadInt64LittleEndian(entry[24..]);
            if (payloadBytes < 0 || payloadBytes > entry.Length - JournalEntryHeader.SizeBytes) continue;
            var transactionId = BinaryPrimitives.ReadInt64LittleEndian(entry[16..]);
            fixed (byte* p = entry)
            {
                var checksum = JournalEntryBuilder.ComputeChecksum(p, payloadBytes, transactionId);
                BinaryPrimitives.WriteUInt32LittleEndian(entry[JournalEntryHeader.ChecksumOffset..], checksum);
            }
        }
    }

    /// <summary>A 64-byte journal block struct whose CRC32C (of the struct with the field zeroed) sits at <paramref name="checksumOffset"/>.</summary>
    private static void RepairStruct(Span<byte> block, int checksumOffset)
    {
        block.Slice(checksumOffset, 4).Clear();
        BinaryPrimitives.WriteUInt32LittleEndian(block[checksumOffset..], Crc32C.Compute(block));
    }

    private static void RepairPage(Span<byte> run)
    {
        fixed (byte* p = run)
        {
            BinaryPrimitives.WriteUInt32LittleEndian(run[PageHeader.ChecksumOffset..], Crc32C.ComputePage(p, run.Length));
        }
    }
}
