using System.Runtime.InteropServices;
using Storage.Commit;
using Storage.Journal;
using Storage.Paging;
using Storage.Tests.Support;
using Storage.Transactions;

namespace Storage.Tests.JournalTests;

/// <summary>
/// A changed page's diff compares only the 64-byte lines its writes recorded. It must be the diff a comparison of the
/// whole page makes whenever every changed byte was recorded, and a write that was not recorded must not go unnoticed.
/// </summary>
public sealed unsafe class WrittenLinesTests
{
    private const int PageSize = PageLayout.PageSizeBytes;

    [Fact]
    public void Marking_a_range_sets_exactly_the_lines_it_touches()
    {
        var map = stackalloc ulong[2];
        (int Offset, int Length, int First, int Last)[] cases =
        [
            (0, 1, 0, 0), (63, 2, 0, 1), (64, 64, 1, 1), (4_095, 2, 63, 64), (4_032, 128, 63, 64),
            (100, 8_000, 1, 126), (PageSize - 1, 1, 127, 127), (0, PageSize, 0, 127), (8_000, 0, -1, -1),
        ];
        foreach (var (offset, length, first, last) in cases)
        {
            map[0] = map[1] = 0;
            WrittenLines.Mark(map, offset, length);
            for (var line = 0; line < WrittenLines.LinesPerPage; line++)
            {
                var expected = line >= first && line <= last;
                Assert.True(expected == ((map[line >> 6] >> (line & 63) & 1) != 0), $"line {line} of [{offset}, {offset + length})");
            }
        }
    }

    [Fact]
    public void Stretches_of_marked_lines_are_found_in_order_across_the_two_words()
    {
        var map = stackalloc ulong[2];
        map[0] = map[1] = 0;
        WrittenLines.Mark(map, 0, 10);           // line 0
        WrittenLines.Mark(map, 62 * 64, 4 * 64); // lines 62-65
        WrittenLines.Mark(map, 127 * 64, 64);    // line 127
        var found = new List<(int, int)>();
        var line = 0;
        while (WrittenLines.NextStretch(map, line, out var start, out var end))
        {
            found.Add((start, end));
            line = end / WrittenLines.LineSizeBytes;
        }
        Assert.Equal([(0, 64), (62 * 64, 66 * 64), (127 * 64, PageSize)], found);
    }

    [Fact]
    public void A_diff_from_recorded_lines_equals_the_diff_of_the_whole_page()
    {
        var random = new Random(23);
        var baseline = (byte*)NativeMemory.AlignedAlloc(PageSize, 64);
        var current = (byte*)NativeMemory.AlignedAlloc(PageSize, 64);
        var map = stackalloc ulong[2];
        var fromLines = new byte[PageSize];
        var whole = new byte[PageSize];
        try
        {
            for (var round = 0; round < 3_000; round++)
            {
                random.NextBytes(new Span<byte>(baseline, PageSize));
                Buffer.MemoryCopy(baseline, current, PageSize, PageSize);
                map[0] = map[1] = 0;
                var runs = random.Next(0, 8);
                for (var r = 0; r < runs; r++)
                {
                    // Ranges that end next to line and word boundaries, tiny ones, long ones, and ones recorded wider than written.
                    var start = random.Next(3) == 0 ? 64 * random.Next(1, 128) - random.Next(0, 9) : random.Next(0, PageSize);
                    var length = Math.Min(PageSize - start, random.Next(3) == 0 ? random.Next(1, 9) : random.Next(1, 2_000));
                    random.NextBytes(new Span<byte>(current + start, length));
                    var slack = random.Next(2) == 0 ? random.Next(0, 100) : 0;
                    var markStart = Math.Max(0, start - slack);
                    WrittenLines.Mark(map, markStart, Math.Min(PageSize, start + length + slack) - markStart);
                }
                var limit = random.Next(2) == 0 ? PageSize - 64 : random.Next(16, 2_000);
                var a = PageDiff.Encode(current, baseline, fromLines, limit, map);
                var b = PageDiff.Encode(current, baseline, whole, limit);
                Assert.Equal(b, a);
                if (a > 0) Assert.True(fromLines.AsSpan(0, a).SequenceEqual(whole.AsSpan(0, b)), $"round {round}");
            }
        }
        finally
        {
            NativeMemory.AlignedFree(baseline);
            NativeMemory.AlignedFree(current);
        }
    }

    [Fact]
    public void A_page_write_the_lines_did_not_record_fails_the_commit_when_checked()
    {
        Assert.True(JournalEntryBuilder.CheckWrittenLines, "the test assembly turns the check on");
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        EnvHelpers.PutAndCommit(env, "t", [.. Enumerable.Range(0, 200).Select(i => ($"key{i:D4}", $"value {i}"))]);

        using (var tx = env.BeginWrite())
        {
            tx.OpenTree("t").Put(TestData.Key("key0100"), TestData.Value("changed"));
            var leaf = tx.Pages.Dirty.Values.Single(p => p.Lines != null && (p.Lines[0] != ulong.MaxValue || p.Lines[1] != ulong.MaxValue));
            var unrecorded = Enumerable.Range(1, WrittenLines.LinesPerPage - 1).First(line => (leaf.Lines[line >> 6] >> (line & 63) & 1) == 0);
            leaf.Buffer.Pointer[unrecorded * WrittenLines.LineSizeBytes + 5] ^= 0xFF;
            var error = Assert.Throws<InvalidOperationException>(() => tx.Commit());
            Assert.Contains("outside the lines its writes recorded", error.Message);
        }

        // Nothing of it was written: the environment goes on with what it had.
        EnvHelpers.PutAndCommit(env, "t", ("key0100", "again"));
        Assert.Equal("again", EnvHelpers.GetString(env, "t", "key0100"));
        Assert.Equal(200, EnvHelpers.CountOf(env, "t"));
    }
}
