using FsCheck.Fluent;
using FsCheck;
using Storage.Paging;
using Storage.Scratch;

namespace Storage.Tests.PagingTests;

/// <summary>
/// <see cref="PageTable.Prune"/> against its definition: after pruning, every snapshot that is pinned, or may still
/// begin (the published state and anything newer), sees exactly the version it saw before, and every version left
/// is one of those (or the newest). What was dropped is handed back, once.
/// </summary>
public sealed class Pruning_a_page_s_versions
{
    [Fact]
    public void Keeps_exactly_what_live_and_future_snapshots_see()
    {
        var scenarios = from count in Gen.Choose(1, 12)
                        from gaps in Gen.Choose(1, 4).ArrayOf(count)
                        from pinned in Gen.Choose(0, 60).ArrayOf()
                        from published in Gen.Choose(0, 60)
                        select (Gaps: gaps, Pinned: pinned, Published: published);
        Prop.ForAll(Arb.From(scenarios), scenario => Check(scenario.Gaps, scenario.Pinned, scenario.Published))
            .Check(Config.QuickThrowOnFailure.WithMaxTest(2000).WithQuietOnSuccess(true));
    }

    [Fact]
    public void With_one_old_reader_keeps_two_versions_whatever_the_number_of_commits()
    {
        var table = new PageTable();
        var buffers = new List<ScratchBuffer>();
        var pruned = new List<ScratchBuffer>();
        try
        {
            for (long tx = 2; tx <= 200; tx++)
            {
                var buffer = new ScratchBuffer(1);
                buffers.Add(buffer);
                table.Add(7, tx, buffer);
                // A reader on transaction 2 and the flusher's pin on nothing: each commit prunes with itself published.
                table.Prune(7, [2], tx, pruned);
            }
            Assert.Equal(197, pruned.Count);
            Assert.Equal(buffers[0].Memory(), table.Version(7, 2));
            Assert.Equal(buffers[^1].Memory(), table.Version(7, 200));
            Assert.Equal(2 * ScratchBufferSize, table.PinnedBytes(oldestSnapshot: 2));
            Assert.Equal(0, table.PinnedBytes(oldestSnapshot: 200) - ScratchBufferSize);
        }
        finally
        {
            foreach (var buffer in buffers) buffer.Release();
        }
    }

    [Fact]
    public void Across_the_table_drops_what_an_ended_reader_kept()
    {
        var table = new PageTable();
        var buffers = new List<ScratchBuffer>();
        var pruned = new List<ScratchBuffer>();
        try
        {
            for (long page = 10; page < 20; page++)
            {
                for (long tx = 1; tx <= 3; tx++)
                {
                    var buffer = new ScratchBuffer(1);
                    buffers.Add(buffer);
                    table.Add(page, tx * 10, buffer);
                }
                table.Prune(page, [10, 20], 30, pruned);
            }
            Assert.Empty(pruned);
            // The reader on 20 ended; the one on 10 remains.
            table.PruneAll([10], 30, pruned);
            Assert.Equal(10, pruned.Count);
            for (long page = 10; page < 20; page++)
            {
                Assert.Equal(buffers[(int)(page - 10) * 3].Memory(), table.Version(page, 19));
                Assert.Equal(buffers[(int)(page - 10) * 3 + 2].Memory(), table.Version(page, 30));
            }
        }
        finally
        {
            foreach (var buffer in buffers) buffer.Release();
        }
    }

    private const long ScratchBufferSize = PageLayout.PageSizeBytes;

    private static bool Check(int[] gaps, int[] pinned, int published)
    {
        const long page = 42;
        var table = new PageTable();
        var buffers = new List<(long TransactionId, ScratchBuffer Buffer)>();
        try
        {
            long tx = 0;
            foreach (var gap in gaps)
            {
                tx += gap;
                var buffer = new ScratchBuffer(1);
                buffers.Add((tx, buffer));
                table.Add(page, tx, buffer);
            }
            var snapshots = pinned.Distinct().Order().Select(s => (long)s).ToArray();
            var observers = snapshots.Concat(Enumerable.Range(published, (int)tx + 2 - Math.Min(published, (int)tx + 2)).Select(s => (long)s)).Distinct().ToArray();
            var before = observers.ToDictionary(s => s, s => table.Version(page, s));

            var pruned = new List<ScratchBuffer>();
            table.Prune(page, snapshots, published, pruned);

            foreach (var s in observers)
            {
                if (table.Version(page, s) != before[s]) throw new InvalidOperationException($"snapshot {s} saw a different version after pruning");
            }
            var kept = buffers.Where(v => !pruned.Contains(v.Buffer)).ToList();
            if (pruned.Count != pruned.Distinct().Count() || kept.Count + pruned.Count != buffers.Count)
                throw new InvalidOperationException("a dropped version was handed back twice, or one was lost");
            foreach (var (id, buffer) in kept)
            {
                var newest = ReferenceEquals(buffer, buffers[^1].Buffer);
                var needed = newest || id > published || observers.Any(s => before[s] == buffer.Memory());
                if (!needed) throw new InvalidOperationException($"version {id} was kept though no snapshot sees it");
            }
            return true;
        }
        finally
        {
            foreach (var (_, buffer) in buffers) buffer.Release();
        }
    }
}

/// <summary>Page-table lookups as the tests compare them: the version's memory, or 0 when the table has none.</summary>
internal static unsafe class PageTableVersions
{
    public static nint Version(this PageTable table, long pageNumber, long snapshot) =>
        table.TryGetPage(pageNumber, snapshot, out var memory, out _) ? (nint)memory : 0;

    public static nint Memory(this ScratchBuffer buffer) => (nint)buffer.Pointer;
}
