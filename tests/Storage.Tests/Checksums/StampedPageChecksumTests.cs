using Storage.Commit;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;

namespace Storage.Tests.Checksums;

/// <summary>
/// A changed page's checksum is worked out from its original's and the bytes that changed (the runs of its diff); it
/// must equal the checksum of the whole page every time, whatever changed.
/// </summary>
public sealed unsafe class StampedPageChecksumTests
{
    private const int PageSize = PageLayout.PageSizeBytes;

    [Fact]
    public void Equals_the_whole_page_checksum_for_random_changes_anywhere_in_the_page()
    {
        var random = new Random(11);
        using var builder = new JournalEntryBuilder(compressionThresholdBytes: int.MaxValue);
        var baseline = (byte*)System.Runtime.InteropServices.NativeMemory.AlignedAlloc(PageSize, 64);
        var current = (byte*)System.Runtime.InteropServices.NativeMemory.AlignedAlloc(PageSize, 64);
        var replayed = (byte*)System.Runtime.InteropServices.NativeMemory.AlignedAlloc(PageSize, 64);
        try
        {
            for (var round = 0; round < 2_000; round++)
            {
                random.NextBytes(new Span<byte>(baseline, PageSize));
                var baselineHeader = (PageHeader*)baseline;
                baselineHeader->TransactionId = random.Next(1, 1_000_000);
                baselineHeader->Checksum = Crc32C.ComputePage(baseline, PageSize);
                Buffer.MemoryCopy(baseline, current, PageSize, PageSize);
                Change(random, current, round);

                builder.Begin();
                var transactionId = baselineHeader->TransactionId + 1 + random.Next(3);
                builder.AddStampedPage(17, current, baseline, transactionId);

                var header = (PageHeader*)current;
                Assert.Equal(transactionId, header->TransactionId);
                Assert.Equal(Crc32C.ComputePage(current, PageSize), header->Checksum);
                // The record rebuilds the stamped page from the baseline.
                Buffer.MemoryCopy(baseline, replayed, PageSize, PageSize);
                var kind = builder.LastRecord(out var data);
                if (kind == JournalRecordKind.Diff) PageDiff.Apply(replayed, data, "test", 17, 0);
                else data.CopyTo(new Span<byte>(replayed, PageSize));
                Assert.True(new ReadOnlySpan<byte>(replayed, PageSize).SequenceEqual(new ReadOnlySpan<byte>(current, PageSize)), $"round {round}");
            }
        }
        finally
        {
            System.Runtime.InteropServices.NativeMemory.AlignedFree(baseline);
            System.Runtime.InteropServices.NativeMemory.AlignedFree(current);
            System.Runtime.InteropServices.NativeMemory.AlignedFree(replayed);
        }
    }

    /// <summary>Runs of changes: next to the checksum field, at both ends of the page, single bytes, long stretches, or most of the page.</summary>
    private static void Change(Random random, byte* page, int round)
    {
        var runs = round % 50 == 0 ? 0 : random.Next(1, 12);
        for (var r = 0; r < runs; r++)
        {
            int start, length;
            switch (random.Next(6))
            {
                case 0: start = random.Next(0, 40); length = random.Next(1, 16); break;
                case 1: start = PageSize - random.Next(1, 64); length = PageSize - start; break;
                case 2: start = random.Next(0, PageSize); length = 1; break;
                case 3: start = random.Next(0, PageSize - 600); length = random.Next(100, 600); break;
                case 4: start = PageHeader.ChecksumOffset - random.Next(0, 8); length = random.Next(1, 20); break;
                default: start = random.Next(0, PageSize / 4); length = random.Next(PageSize / 2, PageSize - start); break;
            }
            random.NextBytes(new Span<byte>(page + start, length));
        }
    }
}
