using Storage.Tests.Support;

namespace Storage.Tests.TransactionTests;

public sealed class Values_of_every_size
{
    public static TheoryData<int> Sizes => new() { 0, 1, 2047, 2048, 2049, 8192 - 32, 8192, 100_000, 1 << 20, 16 << 20 };

    [Theory]
    [MemberData(nameof(Sizes))]
    public void Round_trip_across_a_clean_reopen(int size)
    {
        using var temp = new TempDirectory();
        var random = TestData.Value(size + 1, size);
        var compressible = TestData.Value(3, size);
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            tree.Put("random"u8, random);
            tree.Put("compressible"u8, compressible);
            tree.Put("neighbour"u8, "n"u8);
            Assert.Equal(random, tree.Get("random"u8));
            tx.Commit();
        }

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            using var tx = env.BeginRead();
            var tree = tx.OpenTree("t");
            Assert.True(tree.TryGet("random"u8, out var value));
            Assert.Equal(size, value.Length);
            Assert.True(value.SequenceEqual(random), "the random value came back different");
            Assert.True(tree.Get("compressible"u8).AsSpan().SequenceEqual(compressible), "the compressible value came back different");
            Assert.Equal("n"u8.ToArray(), tree.Get("neighbour"u8));
        }
    }

    [Theory]
    [MemberData(nameof(Sizes))]
    public void Round_trip_across_a_crash_from_the_journal_alone(int size)
    {
        using var temp = new TempDirectory();
        var value = TestData.Value(size + 2, size);
        var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        using (var tx = env.BeginWrite())
        {
            tx.CreateTree("t").Put("v"u8, value);
            tx.Commit();
        }
        env.SimulateCrash();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        using var read = reopened.BeginRead();
        var stored = read.OpenTree("t").Get("v"u8);
        Assert.NotNull(stored);
        Assert.Equal(size, stored.Length);
        Assert.True(stored.AsSpan().SequenceEqual(value));
    }

    [Fact]
    public void A_value_can_change_between_inline_and_overflow_and_back()
    {
        using var temp = new TempDirectory();
        var sizes = new[] { 10, 2049, 0, 40_000, 2048, 3_000_000, 5, 2049 };
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using (var tx = env.BeginWrite())
        {
            tx.CreateTree("t");
            tx.Commit();
        }
        for (var i = 0; i < sizes.Length; i++)
        {
            using (var tx = env.BeginWrite())
            {
                tx.OpenTree("t").Put("v"u8, TestData.Value(i, sizes[i]));
                tx.Commit();
            }
            using (var read = env.BeginRead())
            {
                Assert.Equal(TestData.Value(i, sizes[i]), read.OpenTree("t").Get("v"u8));
            }
        }
        env.Checkpoint();
        using var last = env.BeginRead();
        Assert.Equal(TestData.Value(sizes.Length - 1, sizes[^1]), last.OpenTree("t").Get("v"u8));
    }
}
