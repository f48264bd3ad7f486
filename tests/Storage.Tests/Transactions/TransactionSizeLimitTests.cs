using Storage.Tests.Support;

namespace Storage.Tests.Transactions;

public sealed class A_transaction_larger_than_recovery_can_replay
{
    [Fact]
    public void Is_refused_with_a_typed_error_before_anything_is_written_and_the_environment_stays_usable()
    {
        using var dir = new TempDirectory();
        var options = TestOptions.Small.WithMaxTransactionPayload(256 * 1024);
        using (var env = StorageEnvironment.Open(dir.Path, options))
        {
            var writesBefore = env.GetStats().Journal.Writes;
            using (var tx = env.BeginWrite())
            {
                tx.CreateTree("t").Put("big"u8, new byte[300 * 1024]);
                var error = Assert.Throws<StorageException>(() => tx.Commit());
                Assert.Equal(StorageErrorCode.TransactionTooLarge, error.ErrorCode);
            }
            Assert.Equal(writesBefore, env.GetStats().Journal.Writes);

            using (var tx = env.BeginWrite())
            {
                tx.CreateTree("t").Put("small"u8, new byte[100 * 1024]);
                tx.Commit();
            }
        }
        using (var env = StorageEnvironment.Open(dir.Path, options))
        using (var tx = env.BeginRead())
        {
            var tree = tx.OpenTree("t");
            Assert.False(tree.Contains("big"u8));
            Assert.Equal(100 * 1024, tree.Get("small"u8)!.Length);
        }
    }
}
