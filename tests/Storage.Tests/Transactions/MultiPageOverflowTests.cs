using Storage.Tests.Support;

namespace Storage.Tests.TransactionTests;

/// <summary>
/// Values longer than one page minus its header (8,160 bytes) take an overflow run of two or more pages; once
/// the run is in the data file (after a checkpoint), reading, replacing and deleting it must still work.
/// </summary>
public sealed class A_multi_page_overflow_value_in_the_data_file
{
    [Fact]
    public void Can_be_read_after_a_checkpoint()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        var value = TestData.Value(1, 8161);
        using (var tx = env.BeginWrite())
        {
            tx.CreateTree("t").Put("v"u8, value);
            tx.Commit();
        }
        env.Checkpoint();

        using var read = env.BeginRead();
        Assert.Equal(value, read.OpenTree("t").Get("v"u8));
    }

    [Fact]
    public void Can_be_replaced_and_deleted_after_a_checkpoint()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            tree.Put("replaced"u8, TestData.Value(1, 20_000));
            tree.Put("deleted"u8, TestData.Value(2, 20_000));
            tx.Commit();
        }
        env.Checkpoint();

        using (var tx = env.BeginWrite())
        {
            var tree = tx.OpenTree("t");
            tree.Put("replaced"u8, "small"u8);
            Assert.True(tree.Delete("deleted"u8));
            tx.Commit();
        }

        using var read = env.BeginRead();
        var t = read.OpenTree("t");
        Assert.Equal("small"u8.ToArray(), t.Get("replaced"u8));
        Assert.Null(t.Get("deleted"u8));
    }
}

/// <summary>
/// Overflow runs allocated and freed within one transaction, then freed and reallocated in the next: every
/// value must still read back after a checkpoint (each run in the data file holds only its own value).
/// Found by the model-based test and shrunk to these steps.
/// </summary>
public sealed class Overflow_runs_reused_across_transactions
{
    [Fact]
    public void Do_not_overlap_in_the_data_file()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        var model = OrdinalBytes.NewModel();
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            tree.Put("k6"u8, TestData.Value(1, 12_000));
            tree.Put("k3"u8, TestData.Value(2, 3000));
            tree.Put("k6"u8, TestData.Value(3, 3000));
            Assert.True(tree.Delete("k3"u8));
            tx.Commit();
        }
        using (var tx = env.BeginWrite())
        {
            var tree = tx.OpenTree("t");
            Assert.True(tree.Delete("k6"u8));
            tree.Put("k1"u8, TestData.Value(4, 3000));
            tree.Put("k5"u8, TestData.Value(5, 3000));
            tree.Put("k4"u8, TestData.Value(6, 12_000));
            tx.Commit();
        }
        model[TestData.Key("k1")] = TestData.Value(4, 3000);
        model[TestData.Key("k5")] = TestData.Value(5, 3000);
        model[TestData.Key("k4")] = TestData.Value(6, 12_000);
        using (var read = env.BeginRead())
        {
            TreeAssert.Equal(model, read.OpenTree("t"), "before the checkpoint");
        }

        env.Checkpoint();

        using (var read = env.BeginRead())
        {
            var tree = read.OpenTree("t");
            // The single-page values first: they read back whatever the state of multi-page validation.
            Assert.Equal(TestData.Value(4, 3000), tree.Get("k1"u8));
            Assert.Equal(TestData.Value(5, 3000), tree.Get("k5"u8));
            TreeAssert.Equal(model, tree, "after the checkpoint");
        }
    }
}
