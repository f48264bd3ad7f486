using System.Collections.Concurrent;
using Storage.Paging;
using Storage.Scratch;

namespace Storage.Tests.PagingTests;

/// <summary>
/// Lock-free lookups in <see cref="PageTable"/> while a writer adds and prunes versions and a flusher removes them,
/// so that entries change in place, move between slots, leave the table and are reused for other pages, and the
/// table grows. Every lookup is checked against a model of what was committed: a reader on snapshot S finds exactly
/// the newest version at or before S of the page, or nothing only when there is none or a flush that S allowed covered
/// it (the data file then holds it).
/// </summary>
public sealed class Looking_pages_up_while_the_table_changes
{
    /// <summary>Enough that the table grows past one segment of slots (8,192).</summary>
    private const int Pages = 10_000;
    private const int Commits = 30_000;
    private const int Readers = 2;

    [Fact]
    public void Finds_what_each_snapshot_sees_or_nothing_only_once_flushed()
    {
        var table = new PageTable();
        var tags = new ConcurrentDictionary<nint, (long Page, long Transaction)>();
        // Per page, the transactions that committed a version, in order; appended by the writer before it publishes.
        var committed = new long[Pages][];
        var committedCount = new int[Pages];
        for (var i = 0; i < Pages; i++) committed[i] = new long[8];
        var all = new ConcurrentBag<ScratchBuffer>();
        long published = 0;
        long flushing = 0;
        var slots = new long[Readers];
        Array.Fill(slots, long.MaxValue);
        var done = 0;
        var lookups = 0L;
        var found = 0L;
        var failures = new ConcurrentQueue<string>();

        long OldestPinned(long latest)
        {
            var oldest = latest;
            foreach (ref var slot in slots.AsSpan()) oldest = Math.Min(oldest, Volatile.Read(ref slot));
            return oldest;
        }

        long[] Snapshots()
        {
            var pinned = new List<long>();
            for (var i = 0; i < Readers; i++)
            {
                var s = Volatile.Read(ref slots[i]);
                if (s != long.MaxValue) pinned.Add(s);
            }
            return pinned.Distinct().Order().ToArray();
        }

        var writer = new Thread(() =>
        {
            var random = new Random(11);
            var pruned = new List<ScratchBuffer>();
            var collected = new List<FlushCandidate>();
            var removed = new List<ScratchBuffer>();
            var touched = new HashSet<long>();
            try
            {
                for (long tx = 1; tx <= Commits; tx++)
                {
                    touched.Clear();
                    // Pages that recur, so that versions pile up and are pruned, and many others, so that entries come and go.
                    var count = random.Next(1, 6);
                    for (var k = 0; k < count; k++) touched.Add(random.Next(4) == 0 ? random.Next(16) : random.Next(Pages));
                    foreach (var page in touched)
                    {
                        var buffer = new ScratchBuffer(1);
                        all.Add(buffer);
                        unsafe { tags[(nint)buffer.Pointer] = (page, tx); }
                        ref var versions = ref committed[page];
                        var n = committedCount[page];
                        if (n == versions.Length) Array.Resize(ref versions, n * 2);
                        versions[n] = tx;
                        Volatile.Write(ref committedCount[page], n + 1);
                        table.Add(page, tx, buffer);
                    }
                    // As the engine does: the published state is read before the reader slots.
                    var before = Volatile.Read(ref published);
                    var snapshots = Snapshots();
                    foreach (var page in touched) table.Prune(page, snapshots, before, pruned);
                    Volatile.Write(ref published, tx);
                    if (tx % 31 == 0)
                    {
                        var upTo = OldestPinned(tx);
                        if (upTo > Volatile.Read(ref flushing))
                        {
                            // Readers on S >= upTo read what this flush writes from the data file once the versions leave.
                            Volatile.Write(ref flushing, upTo);
                            collected.Clear();
                            table.CollectFlushable(upTo, collected);
                            table.RemoveUpTo(upTo, collected, removed);
                        }
                    }
                }
            }
            catch (Exception e)
            {
                failures.Enqueue(e.ToString());
            }
            finally
            {
                Volatile.Write(ref done, 1);
            }
        });

        var readers = Enumerable.Range(0, Readers).Select(r => new Thread(() =>
        {
            var random = new Random(100 + r);
            try
            {
                while (Volatile.Read(ref done) == 0 && failures.IsEmpty)
                {
                    // Register as the engine's reader table does: the slot is written, then the state is read again.
                    long snapshot;
                    do
                    {
                        snapshot = Volatile.Read(ref published);
                        Interlocked.Exchange(ref slots[r], snapshot);
                    }
                    while (Volatile.Read(ref published) != snapshot);
                    for (var i = 0; i < 200; i++)
                    {
                        var page = random.Next(3) == 0 ? random.Next(16) : random.Next(Pages);
                        // The newest version is read from the entry alone, older ones from its arrays.
                        bool hit;
                        (long Page, long Transaction) tag = default;
                        unsafe
                        {
                            hit = table.TryGetPage(page, snapshot, out var memory, out var pageCount);
                            if (hit) tag = pageCount == 1 ? tags[(nint)memory] : (-1, -1);
                        }
                        var expected = NewestAtOrBefore(committed[page], Volatile.Read(ref committedCount[page]), snapshot);
                        Interlocked.Increment(ref lookups);
                        if (hit)
                        {
                            Interlocked.Increment(ref found);
                            if (tag.Page != page || tag.Transaction != expected)
                            {
                                failures.Enqueue($"page {page} at snapshot {snapshot}: found page {tag.Page} version {tag.Transaction}, expected version {expected}");
                            }
                        }
                        else if (expected != 0 && expected > Volatile.Read(ref flushing))
                        {
                            failures.Enqueue($"page {page} at snapshot {snapshot}: found nothing, but version {expected} was not flushed");
                        }
                    }
                    Volatile.Write(ref slots[r], long.MaxValue);
                }
            }
            catch (Exception e)
            {
                failures.Enqueue(e.ToString());
            }
        })).ToList();

        try
        {
            writer.Start();
            readers.ForEach(t => t.Start());
            writer.Join();
            readers.ForEach(t => t.Join());
            Assert.Empty(failures);
            Assert.True(lookups > 10_000, $"only {lookups} lookups ran");
            Assert.True(found > 1_000, $"only {found} of {lookups} lookups found a version");
        }
        finally
        {
            foreach (var buffer in all) buffer.Release();
        }
    }

    /// <summary>The newest of the first <paramref name="count"/> transactions at or before the snapshot, or 0.</summary>
    private static long NewestAtOrBefore(long[] transactions, int count, long snapshot)
    {
        for (var i = Math.Min(count, transactions.Length) - 1; i >= 0; i--)
        {
            if (transactions[i] <= snapshot) return transactions[i];
        }
        return 0;
    }
}
