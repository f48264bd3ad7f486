using Storage.Tests.Support;

namespace Storage.Tests.Backup;

/// <summary>Incremental backups after a full one, chains of them, and restores to the end of any link or to any transaction in between.</summary>
public sealed class Incremental_backups
{
    /// <summary>Small journal files, flushed and synced all the time, so that files are retired while the chain is taken.</summary>
    private static readonly StorageOptions Busy = TestOptions.Small with
    {
        MinJournalFileSizeBytes = 64 << 10,
        MaxJournalFileSizeBytes = 128 << 10,
        FlushInterval = TimeSpan.FromMilliseconds(1),
        SyncInterval = TimeSpan.FromMilliseconds(1),
        RetainedJournalBytes = 1L << 30,
    };

    private static readonly BackupTestWorkload Workload = new(keys: 300, deleteEvery: 9);

    private static void Commit(StorageEnvironment env, long i) => Workload.Commit(env, i);

    /// <summary>The restored environment holds transaction <paramref name="transaction"/>, whose tree "t" is exactly the model's.</summary>
    private static void AssertState(string directory, long transaction) =>
        Assert.Equal(transaction, Workload.AssertRestored(directory, transaction));

    [Fact]
    public async Task A_chain_of_ten_restores_to_the_end_of_every_link_and_to_any_transaction_between()
    {
        using var dir = new TempDirectory();
        var backups = dir.Combine("backups");
        var chain = new List<BackupResult>();
        await using (var env = StorageEnvironment.Open(dir.Combine("source"), Busy))
        {
            for (var i = 1; i <= 200; i++) Commit(env, i);
            chain.Add(await env.BackupAsync(backups, cancellationToken: TestContext.Current.CancellationToken));
            for (var link = 0; link < 10; link++)
            {
                var from = chain[^1].TransactionId;
                for (var i = from + 1; i <= from + 100; i++) Commit(env, i);
                var incremental = await env.BackupIncrementalAsync(backups, from, cancellationToken: TestContext.Current.CancellationToken);
                Assert.Equal(from, incremental.BaseTransactionId);
                Assert.Equal(100, incremental.Transactions);
                Assert.Equal(from + 100, incremental.TransactionId);
                chain.Add(incremental);
            }
            Assert.True(Directory.GetFiles(Path.Combine(env.DirectoryPath, "RetainedJournals")).Length > 3, "journal files were retired (and kept) while the chain was taken");
        }
        var files = chain.Select(b => b.Path!).ToList();

        // The writer's transaction i is the environment's transaction i: the first commit creates the tree.
        for (var end = 0; end < chain.Count; end += 3)
        {
            var target = dir.Combine($"link-{end}");
            var restored = await StorageEnvironment.RestoreAsync(files.Take(end + 1).ToList(), target, cancellationToken: TestContext.Current.CancellationToken);
            Assert.Equal(chain[end].TransactionId, restored.TransactionId);
            AssertState(target, chain[end].TransactionId);
        }
        var random = new Random(11);
        for (var k = 0; k < 20; k++)
        {
            var wanted = random.NextInt64(chain[0].TransactionId, chain[^1].TransactionId + 1);
            var target = dir.Combine($"at-{k}");
            var restored = await StorageEnvironment.RestoreAsync(files, target, wanted, cancellationToken: TestContext.Current.CancellationToken);
            Assert.Equal(wanted, restored.TransactionId);
            AssertState(target, wanted);
        }
        // Every link verifies whole on its own.
        foreach (var file in files.Skip(1))
        {
            var description = await StorageEnvironment.VerifyBackupAsync(file, TestContext.Current.CancellationToken);
            Assert.True(description.IsIncremental);
            Assert.Equal(100, description.Pages);
        }
    }

    [Fact]
    public async Task A_missing_link_or_a_link_out_of_order_is_refused_naming_the_file()
    {
        using var dir = new TempDirectory();
        var backups = dir.Combine("backups");
        var chain = new List<string>();
        await using (var env = StorageEnvironment.Open(dir.Combine("source"), Busy))
        {
            for (var i = 1; i <= 50; i++) Commit(env, i);
            var last = await env.BackupAsync(backups, cancellationToken: TestContext.Current.CancellationToken);
            chain.Add(last.Path!);
            for (var link = 0; link < 3; link++)
            {
                for (var i = last.TransactionId + 1; i <= last.TransactionId + 20; i++) Commit(env, i);
                last = await env.BackupIncrementalAsync(backups, last.TransactionId, cancellationToken: TestContext.Current.CancellationToken);
                chain.Add(last.Path!);
            }
        }
        foreach (var broken in new[] { new[] { chain[0], chain[2], chain[3] }, [chain[0], chain[2], chain[1]], [chain[1], chain[2]] })
        {
            var error = await Assert.ThrowsAsync<StorageCorruptedException>(() =>
                StorageEnvironment.RestoreAsync(broken, dir.Combine("restored"), cancellationToken: TestContext.Current.CancellationToken));
            Assert.True(error.Message.Contains("does not continue the chain", StringComparison.Ordinal) || error.Message.Contains("a chain starts with a full one", StringComparison.Ordinal), error.Message);
            Assert.False(Directory.Exists(dir.Combine("restored")));
        }
        var bytes = File.ReadAllBytes(chain[2]);
        bytes[bytes.Length / 2] ^= 1;
        File.WriteAllBytes(chain[2], bytes);
        var damaged = await Assert.ThrowsAsync<StorageCorruptedException>(() =>
            StorageEnvironment.RestoreAsync(chain, dir.Combine("restored"), cancellationToken: TestContext.Current.CancellationToken));
        Assert.Contains(Path.GetFileName(chain[2]), damaged.Message);
        Assert.False(Directory.Exists(dir.Combine("restored")));
    }

    [Fact]
    public async Task After_a_base_the_journal_no_longer_holds_it_fails_with_BackupChainBroken()
    {
        using var dir = new TempDirectory();
        await using var env = StorageEnvironment.Open(dir.Combine("source"), Busy with { RetainedJournalBytes = 0 });
        for (var i = 1; i <= 20; i++) Commit(env, i);
        // Enough commits for the small journal files to be retired (and recycled, nothing kept) after a sync.
        for (var i = 21; i <= 600; i++) Commit(env, i);
        env.Checkpoint();
        var error = await Assert.ThrowsAsync<StorageException>(() => env.BackupIncrementalAsync(new MemoryStream(), 10, cancellationToken: TestContext.Current.CancellationToken));
        Assert.Equal(StorageErrorCode.BackupChainBroken, error.ErrorCode);
        Assert.Contains(nameof(StorageOptions.RetainedJournalBytes), error.Message);
    }
}
