using System.Runtime.InteropServices;
using Storage.Journal;
using Storage.Paging;
using Storage.State;

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

    [Fact]
    public void A_shared_journal_file_header_has_its_own_format_version_and_flag()
    {
        var header = JournalFileHeader.Create(0xABCDEF, fileNumber: 7, fileSizeBytes: 1 << 20, firstTransactionId: 42, recycled: false, shared: true);
        var block = new byte[JournalFileHeader.BlockBytes];
        fixed (byte* p = block) header.WriteBlock(p);

        var parsed = JournalFileHeader.TryParse(block, out var problem);

        Assert.Null(problem);
        Assert.True(parsed!.Value.IsShared);
        Assert.Equal(JournalFileHeader.SharedFormatVersion, parsed.Value.FormatVersion);
        // A shared file put into use again says so too.
        var recycled = JournalFileHeader.Create(0xABCDEF, fileNumber: 9, fileSizeBytes: 1 << 20, firstTransactionId: 50, recycled: true, shared: true);
        fixed (byte* p = block) recycled.WriteBlock(p);
        Assert.True(JournalFileHeader.TryParse(block, out problem) is { IsShared: true, IsRecycled: true, FileNumber: 9 }, problem);
        // The flag without the version (or the version without the flag) is no file this library writes.
        foreach (var (version, flags) in new[] { (JournalFileHeader.CurrentFormatVersion, JournalFileHeader.SharedFlag), (JournalFileHeader.SharedFormatVersion, 0) })
        {
            var odd = header with { FormatVersion = version, Flags = flags };
            odd.Checksum = JournalBlock.Checksum(odd, JournalFileHeader.ChecksumOffset);
            var oddBlock = new byte[JournalFileHeader.BlockBytes];
            fixed (byte* p = oddBlock) odd.WriteBlock(p);
            Assert.Null(JournalFileHeader.TryParse(oddBlock, out problem));
            Assert.Contains("no such file", problem);
        }
    }

    [Fact]
    public void A_group_end_marker_gives_each_member_its_own_next_file_and_refuses_any_flipped_bit()
    {
        var block = new byte[JournalGroupEndMarker.BlockBytes];
        GroupEndRecord[] records = [new(0xA, FileNumber: 7, NextFileNumber: 8, NextTransactionId: 100), new(0xB, FileNumber: 3, NextFileNumber: 4, NextTransactionId: 20)];
        JournalGroupEndMarker.Write(block, writerEnvironmentId: 0xA, fileNumber: 7, records);

        Assert.Equal(records[0], JournalGroupEndMarker.TryFind(block, 0xA, 7));
        Assert.Equal(records[1], JournalGroupEndMarker.TryFind(block, 0xB, 3));
        Assert.Null(JournalGroupEndMarker.TryFind(block, 0xB, 7));
        Assert.Null(JournalGroupEndMarker.TryFind(block, 0xC, 3));
        var used = JournalGroupEndMarker.HeaderBytes + records.Length * JournalGroupEndMarker.RecordBytes;
        for (var bit = 0; bit < used * 8; bit++)
        {
            var damaged = (byte[])block.Clone();
            damaged[bit / 8] ^= (byte)(1 << (bit % 8));
            Assert.Null(JournalGroupEndMarker.TryFind(damaged, 0xB, 3));
        }
        Assert.Throws<ArgumentException>(() => JournalGroupEndMarker.Write(block, 0xA, 7, new GroupEndRecord[JournalGroupEndMarker.MaxRecords + 1]));
    }
}
