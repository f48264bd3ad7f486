using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.TransactionsTests;

/// <summary>Calls that come back into the engine from a caller's code, or ask for something outlandish: a typed error, never a crash or a hang.</summary>
public sealed class Calls_back_into_the_engine
{
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void A_GetMany_callback_that_ends_its_transaction_stops_the_batch_with_TransactionNotUsable(bool inWrite)
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using (var fill = env.BeginWrite())
        {
            var tree = fill.CreateTree("t");
            for (var i = 0; i < 5_000; i++) tree.Put(TestData.Key($"k{i:D5}"), TestData.Value(new string('v', 200)));
            fill.Commit();
        }
        env.Checkpoint();
        // A read begun before a later commit grows the file reads a map that commit may replace.
        var reader = env.BeginRead();
        PutAndCommit(env, "t", [.. Enumerable.Range(0, 2_000).Select(i => ($"later{i:D5}", new string('w', 300)))]);
        Transaction tx = inWrite ? env.BeginWrite() : reader;
        var keys = Enumerable.Range(0, 5_000).Select(i => (ReadOnlyMemory<byte>)TestData.Key($"k{i:D5}")).ToArray();
        var calls = 0;

        var error = Assert.Throws<StorageException>(() => tx.OpenTree("t").GetMany(keys, (value, _) =>
        {
            calls++;
            tx.Dispose();
        }));

        Assert.Equal(StorageErrorCode.TransactionNotUsable, error.ErrorCode);
        Assert.Equal(1, calls);
        reader.Dispose();
        Assert.Equal(new string('v', 200), GetString(env, "t", "k04999"));
    }

    [Fact]
    public async Task A_reverse_scan_of_a_prefix_longer_than_any_key_finds_nothing()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"), ("b", "2"));
        var prefix = new byte[16 << 20];
        Array.Fill(prefix, (byte)'a');

        // On a pool thread, whose stack is smaller than the prefix.
        var found = await Task.Run(() =>
        {
            using var tx = env.BeginRead();
            var range = tx.OpenTree("t").Prefix(prefix, reverse: true);
            return range.Count();
        });

        Assert.Equal(0, found);
        using var read = env.BeginRead();
        Assert.Equal(1, read.OpenTree("t").Prefix("a"u8, reverse: true).Count());
    }

    [Fact]
    public async Task A_merged_write_that_calls_Write_from_its_operation_fails_that_caller_and_the_merger_goes_on()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);

        var nested = env.WriteAsync(tx =>
        {
            tx.OpenOrCreateTree("t").Put(TestData.Key("outer"), "1"u8);
            env.Write(inner => inner.OpenOrCreateTree("t").Put(TestData.Key("inner"), "2"u8));
        }, TestContext.Current.CancellationToken);
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => nested.WaitAsync(Within.Default, TestContext.Current.CancellationToken));
        Assert.Contains("wait for itself", error.Message);

        Assert.True(env.Write(tx => tx.OpenOrCreateTree("t").Put(TestData.Key("after"), "3"u8)).IsDurable);
        Assert.Null(GetString(env, "t", "outer"));
        Assert.Null(GetString(env, "t", "inner"));
        Assert.Equal("3", GetString(env, "t", "after"));
    }
}
