using Storage.Tests.Support;

namespace Storage.Tests.TransactionTests;

/// <summary>
/// Cursors of read transactions: they read the current key from the page instead of copying it, and load the
/// entries and leaves ahead of them. Both directions must still visit every entry exactly once, in order, over a
/// tree written at random (nodes in its pages lie in write order, not key order), and a key span stays valid until
/// the transaction ends.
/// </summary>
public sealed class A_cursor_in_a_read_transaction
{
    private const int Entries = 3_000;

    private static byte[] KeyOf(int i) => TestData.Key($"k{i:D6}");

    private static TempDirectory FilledAtRandom(out StorageEnvironment env)
    {
        var temp = new TempDirectory();
        env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        var order = Enumerable.Range(0, Entries).ToArray();
        new Random(11).Shuffle(order);
        foreach (var chunk in order.Chunk(250))
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenOrCreateTree("t");
            foreach (var i in chunk) tree.Put(KeyOf(i), TestData.Value(i, 60 + i % 90));
            tx.Commit();
        }
        return temp;
    }

    [Fact]
    public void Visits_every_entry_once_in_order_both_ways()
    {
        using var temp = FilledAtRandom(out var env);
        using (env)
        using (var tx = env.BeginRead())
        {
            var cursor = tx.OpenTree("t").CreateCursor();
            var seen = 0;
            for (var ok = cursor.SeekFirst(); ok; ok = cursor.MoveNext())
            {
                Assert.Equal(KeyOf(seen), cursor.Key.ToArray());
                Assert.Equal(TestData.Value(seen, 60 + seen % 90), cursor.Value.ToArray());
                seen++;
            }
            Assert.Equal(Entries, seen);

            for (var ok = cursor.SeekLast(); ok; ok = cursor.MovePrevious())
            {
                seen--;
                Assert.Equal(KeyOf(seen), cursor.Key.ToArray());
                Assert.Equal(TestData.Value(seen, 60 + seen % 90), cursor.Value.ToArray());
            }
            Assert.Equal(0, seen);

            // A seek into the middle, then both ways from it.
            Assert.True(cursor.Seek(KeyOf(1_500)));
            Assert.True(cursor.MovePrevious());
            Assert.Equal(KeyOf(1_499), cursor.Key.ToArray());
            Assert.True(cursor.MoveNext());
            Assert.True(cursor.MoveNext());
            Assert.Equal(KeyOf(1_501), cursor.Key.ToArray());
        }
    }

    [Fact]
    public void Gives_keys_that_stay_valid_until_the_transaction_ends_while_commits_go_on()
    {
        using var temp = FilledAtRandom(out var env);
        using (env)
        using (var tx = env.BeginRead())
        {
            var cursor = tx.OpenTree("t").CreateCursor();
            Assert.True(cursor.SeekFirst());
            var first = cursor.Key;
            // Move across many leaves, and change and flush the tree meanwhile: the snapshot's pages stay as they were.
            for (var i = 0; i < Entries / 2; i++) Assert.True(cursor.MoveNext());
            using (var write = env.BeginWrite())
            {
                var tree = write.OpenTree("t");
                tree.Delete(KeyOf(0));
                for (var i = 0; i < Entries; i += 3) tree.Put(KeyOf(i + 1), TestData.Value(i, 500));
                write.Commit();
            }
            env.Checkpoint();
            Assert.Equal(KeyOf(0), first.ToArray());
            Assert.Equal(KeyOf(Entries / 2), cursor.Key.ToArray());
        }
    }
}
