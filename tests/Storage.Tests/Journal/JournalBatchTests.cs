using Storage.Journal;

namespace Storage.Tests.JournalTests;

/// <summary>
/// The buffers journal entries wait in until their write: lazy commits fill one for a whole delay, so a buffer grown for
/// them is kept while batches that large go on, and given back once they stop or after one unusually large transaction.
/// </summary>
public sealed unsafe class A_journal_batch
{
    private const long MiB = 1 << 20;

    private static readonly byte[] s_entry = new byte[MiB];

    /// <summary>Appends <paramref name="megabytes"/> of entries, takes the batch as a write does, and reports it written.</summary>
    private static long WriteBatch(JournalBatch batch, int megabytes)
    {
        fixed (byte* entry = s_entry)
        {
            for (var i = 0; i < megabytes; i++) batch.Add(entry, MiB, i * MiB);
        }
        var (buffer, _, length) = batch.Take();
        Assert.Equal(megabytes * MiB, length);
        batch.Written(buffer, length);
        return buffer.Capacity;
    }

    [Fact]
    public void Keeps_a_buffer_grown_by_large_batches_while_they_go_on_and_gives_it_back_once_they_stop()
    {
        using var batch = new JournalBatch();
        // Batches a little over the retained size, as lazy commits at a high rate make, grow each buffer once and keep it.
        Assert.Equal(32 * MiB, WriteBatch(batch, 20));
        Assert.Equal(32 * MiB, WriteBatch(batch, 20));
        for (var i = 0; i < 10; i++)
        {
            Assert.Equal(32 * MiB, WriteBatch(batch, 20));
            Assert.Equal(32 * MiB, WriteBatch(batch, 4));
        }
        // Small batches from then on: the memory goes back after a run of them, not at the first.
        var capacities = new List<long>();
        for (var i = 0; i < 20; i++) capacities.Add(WriteBatch(batch, 1));
        Assert.Equal(32 * MiB, capacities[0]);
        Assert.Equal(16 * MiB, capacities[^1]);
        Assert.Equal(16 * MiB, capacities[^2]);
    }

    [Fact]
    public void Gives_back_at_once_a_buffer_grown_past_what_lazy_commits_need()
    {
        using var batch = new JournalBatch();
        Assert.Equal(16 * MiB, WriteBatch(batch, 65));
    }
}
