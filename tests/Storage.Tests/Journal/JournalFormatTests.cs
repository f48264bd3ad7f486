using System.Runtime.InteropServices;
using Storage.Environments;
using Storage.Journal;
using Storage.Paging;

namespace Storage.Tests.JournalTests;

public sealed unsafe class The_journal_and_header_formats
{
    [Fact]
    public void On_disk_structs_have_their_documented_sizes_and_field_offsets()
    {
        Assert.Equal(JournalFileHeader.SizeBytes, sizeof(JournalFileHeader));
        Assert.Equal(JournalEndMarker.SizeBytes, sizeof(JournalEndMarker));
        Assert.Equal(JournalEntryHeader.SizeBytes, sizeof(JournalEntryHeader));
        Assert.Equal(JournalRecordHeader.SizeBytes, sizeof(JournalRecordHeader));
        Assert.Equal(FileHeader.SizeBytes, sizeof(FileHeader));
        Assert.Equal(JournalFileHeader.ChecksumOffset, (int)Marshal.OffsetOf<JournalFileHeader>(nameof(JournalFileHeader.Checksum)));
        Assert.Equal(JournalEndMarker.ChecksumOffset, (int)Marshal.OffsetOf<JournalEndMarker>(nameof(JournalEndMarker.Checksum)));
        Assert.Equal(14, (int)Marshal.OffsetOf<PageHeader>(nameof(PageHeader.TransactionIdHigh)));
        Assert.Equal(28, (int)Marshal.OffsetOf<PageHeader>(nameof(PageHeader.TransactionIdLow)));
    }

    [Fact]
    public void A_page_header_keeps_48_bits_of_transaction_id()
    {
        var header = default(PageHeader);
        header.TransactionId = PageHeader.MaxTransactionId;
        Assert.Equal(PageHeader.MaxTransactionId, header.TransactionId);
        header.TransactionId = 0x1234_5678_9ABCL;
        Assert.Equal(0x1234, header.TransactionIdHigh);
        Assert.Equal(0x5678_9ABCu, header.TransactionIdLow);
    }

    [Fact]
    public void A_journal_file_header_round_trips_and_any_flipped_bit_is_refused()
    {
        var header = JournalFileHeader.Create(0xABCDEF, fileNumber: 7, fileSizeBytes: 1 << 20, firstTransactionId: 42, recycled: true);
        var block = new byte[JournalFileHeader.BlockBytes];
        fixed (byte* p = block) header.WriteBlock(p);

        var parsed = JournalFileHeader.TryParse(block, out var problem);

        Assert.Null(problem);
        Assert.Equal(7, parsed!.Value.FileNumber);
        Assert.Equal(42, parsed.Value.FirstTransactionId);
        Assert.NotEqual(0, parsed.Value.Flags & JournalFileHeader.RecycledFlag);
        for (var bit = 0; bit < JournalFileHeader.SizeBytes * 8; bit++)
        {
            var damaged = (byte[])block.Clone();
            damaged[bit / 8] ^= (byte)(1 << (bit % 8));
            Assert.Null(JournalFileHeader.TryParse(damaged, out _));
        }
    }

    [Fact]
    public void An_end_marker_is_valid_only_for_its_own_file_and_environment()
    {
        var marker = JournalEndMarker.Create(0xABCDEF, fileNumber: 7, nextFileNumber: 8, nextTransactionId: 100);
        var block = new byte[JournalEndMarker.BlockBytes];
        fixed (byte* p = block) marker.WriteBlock(p);

        Assert.Equal(8, JournalEndMarker.TryParse(block, 0xABCDEF, 7)!.Value.NextFileNumber);
        Assert.Null(JournalEndMarker.TryParse(block, 0xABCDEF, 6));
        Assert.Null(JournalEndMarker.TryParse(block, 0x123, 7));
        block[33] ^= 1;
        Assert.Null(JournalEndMarker.TryParse(block, 0xABCDEF, 7));
    }
}
