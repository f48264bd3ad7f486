using System.Text;
using Storage.Tests.Support;

namespace Storage.Tests.TransactionTests;

public sealed class Large_transactions
{
    private static byte[] Key(int i) => Encoding.ASCII.GetBytes($"key-{(i * 7919) % 50_000:D6}");

    [Fact]
    public void Fifty_thousand_puts_in_one_commit_survive_a_reopen_and_a_crash()
    {
        using var temp = new TempDirectory();
        const int count = 50_000;
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            using var tx = env.BeginWrite();
            var tree = tx.CreateTree("big");
            for (var i = 0; i < count; i++) tree.Put(Key(i), TestData.Value(i, 16 + i % 64));
            Assert.Equal(count, tree.Count);
            var stats = tx.Commit();
            Assert.True(stats.PagesModified > 100, $"{stats.PagesModified} pages");
        }

        var crashed = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        using (var read = crashed.BeginRead())
        {
            Verify(read.OpenTree("big"));
        }
        // A second large transaction lives in the journal only, then the process "dies".
        using (var tx = crashed.BeginWrite())
        {
            var tree = tx.OpenTree("big");
            for (var i = 0; i < count; i += 2) Assert.True(tree.Delete(Key(i)));
            tx.Commit();
        }
        crashed.SimulateCrash();

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            using var read = env.BeginRead();
            var tree = read.OpenTree("big");
            Assert.Equal(count / 2, tree.Count);
            for (var i = 0; i < count; i++)
            {
                var value = tree.Get(Key(i));
                if (i % 2 == 0) Assert.Null(value);
                else Assert.Equal(TestData.Value(i, 16 + i % 64), value);
            }
        }

        static void Verify(Tree tree)
        {
            Assert.Equal(count, tree.Count);
            var seen = 0;
            byte[]? previous = null;
            foreach (var entry in tree.Range(default, default))
            {
                Assert.True(previous is null || entry.Key.SequenceCompareTo(previous) > 0, "keys come in order");
                previous = entry.Key.ToArray();
                seen++;
            }
            Assert.Equal(count, seen);
            for (var i = 0; i < count; i += 97) Assert.Equal(TestData.Value(i, 16 + i % 64), tree.Get(Key(i)));
        }
    }

    [Fact]
    public void A_transaction_larger_than_the_biggest_journal_file_is_written_and_recovered()
    {
        using var temp = new TempDirectory();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.Small with { CompressionThresholdBytes = 0 });
        var model = OrdinalBytes.NewModel();
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            for (var i = 0; i < 300; i++)
            {
                var key = TestData.Key($"k{i:D4}");
                var value = TestData.Value(i + 1, 3000);
                tree.Put(key, value);
                model[key] = value;
            }
            Assert.True(tx.Commit().JournalBytes > 256 << 10);
        }
        env.SimulateCrash();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using var read = reopened.BeginRead();
        TreeAssert.Equal(model, read.OpenTree("t"));
    }
}
