using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.TransactionsTests;

public sealed class Merged_writes
{
    [Fact]
    public async Task Operations_waiting_together_commit_in_one_transaction_and_one_write_and_each_caller_learns_when_durable()
    {
        using var dir = new TempDirectory();
        var gate = new GatedJournalWrites();
        var env = StorageEnvironment.Open(dir.Path, gate.Options);
        PutAndCommit(env, "t", ("before", "0"));

        // The merger is held inside the first operation while twenty more queue; the first's journal write is held too.
        using var held = HeldMerger.Start(env, "first", "1");
        var first = held.Operation;
        var writesBefore = env.GetStats().Journal.Writes;
        var merged = Enumerable.Range(0, 20)
            .Select(i => env.WriteAsync(tx => tx.OpenTree("t").Put(TestData.Key($"k{i}"), TestData.Value($"v{i}"))))
            .ToArray();
        gate.Arm();
        held.Release();
        gate.WaitUntilHeld();
        Assert.False(first.IsCompleted);
        Assert.DoesNotContain(merged, task => task.IsCompleted);
        gate.Release();

        var firstStats = await first;
        var stats = await Task.WhenAll(merged);
        // The twenty ran in one transaction after the first, and each caller learned of it once durable.
        Assert.All(stats, s => Assert.True(s.IsDurable && s.TransactionId == firstStats.TransactionId + 1));
        // The two merged transactions in one write or two (the second may be appended before the first's write began).
        Assert.InRange(env.GetStats().Journal.Writes, writesBefore + 1, writesBefore + 2);

        env.SimulateCrash();
        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        Assert.Equal("1", GetString(reopened, "t", "first"));
        for (var i = 0; i < 20; i++) Assert.Equal($"v{i}", GetString(reopened, "t", $"k{i}"));
    }

    [Fact]
    public async Task An_operation_that_throws_fails_only_its_caller_and_leaves_nothing_behind()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("before", "0"));

        // The merger is held inside an operation while the next three queue: they run together.
        using var held = HeldMerger.Start(env, "holder", "h");
        var holder = held.Operation;
        var runs = 0;
        var good1 = env.WriteAsync(tx =>
        {
            Interlocked.Increment(ref runs);
            tx.OpenTree("t").Put(TestData.Key("good1"), "1"u8);
        }, TestContext.Current.CancellationToken);
        var bad = env.WriteAsync(tx =>
        {
            tx.OpenTree("t").Put(TestData.Key("bad"), "x"u8);
            throw new InvalidOperationException("caller's own failure");
        }, TestContext.Current.CancellationToken);
        var good2 = env.WriteAsync(tx => tx.OpenTree("t").Put(TestData.Key("good2"), "2"u8), TestContext.Current.CancellationToken);
        held.Release();

        await holder;
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => bad);
        Assert.Equal("caller's own failure", error.Message);
        Assert.True((await good1).IsDurable);
        Assert.True((await good2).IsDurable);
        // The merged transaction was rolled back and run again without the failing operation.
        Assert.Equal(2, runs);
        Assert.Equal("1", GetString(env, "t", "good1"));
        Assert.Equal("2", GetString(env, "t", "good2"));
        Assert.Null(GetString(env, "t", "bad"));
    }

    [Fact]
    public async Task A_cancelled_operation_is_skipped_and_a_failed_write_fails_every_merged_caller()
    {
        using var dir = new TempDirectory();
        var gate = new GatedJournalWrites();
        var env = StorageEnvironment.Open(dir.Path, gate.Options);
        PutAndCommit(env, "t", ("before", "0"));

        // The merger is held inside an operation while the next ones queue, one of them then cancelled.
        gate.Arm(fail: true);
        using var held = HeldMerger.Start(env, "holder", "h");
        var holder = held.Operation;
        using var cancel = new CancellationTokenSource();
        var skipped = env.WriteAsync(tx => tx.OpenTree("t").Put(TestData.Key("skipped"), "s"u8), cancel.Token);
        var later = env.WriteAsync(tx => tx.OpenTree("t").Put(TestData.Key("later"), "l"u8), TestContext.Current.CancellationToken);
        cancel.Cancel();
        held.Release();
        gate.WaitUntilHeld();
        gate.Release();

        Assert.Equal(StorageErrorCode.IoFailure, (await Assert.ThrowsAsync<StorageException>(() => holder)).ErrorCode);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => skipped);
        // In the failed write (its error) or after it (the environment is poisoned): either way not committed.
        Assert.Contains((await Assert.ThrowsAsync<StorageException>(() => later)).ErrorCode, new[] { StorageErrorCode.IoFailure, StorageErrorCode.EnvironmentPoisoned });
        env.Dispose();

        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        Assert.Equal("0", GetString(reopened, "t", "before"));
        Assert.Null(GetString(reopened, "t", "holder"));
        Assert.Null(GetString(reopened, "t", "skipped"));
        Assert.Null(GetString(reopened, "t", "later"));
    }

    [Fact]
    public void Write_blocks_until_durable_and_many_threads_lose_nothing()
    {
        using var dir = new TempDirectory();
        var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("before", "0"));
        Parallel.For(0, 8, new ParallelOptions { MaxDegreeOfParallelism = 8 }, t =>
        {
            for (var i = 0; i < 25; i++)
            {
                var stats = env.Write(tx => tx.OpenTree("t").Put(TestData.Key($"t{t}-{i}"), TestData.Value($"{t}.{i}")));
                Assert.True(env.GetStats().LastDurableTransactionId >= stats.TransactionId);
            }
        });
        env.SimulateCrash();
        using var reopened = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        for (var t = 0; t < 8; t++)
        {
            for (var i = 0; i < 25; i++) Assert.Equal($"{t}.{i}", GetString(reopened, "t", $"t{t}-{i}"));
        }
    }

    /// <summary>
    /// A merged operation that holds the merger inside it (so that the operations submitted meanwhile queue and run
    /// together afterwards) until <see cref="Release"/>; then it puts <c>key</c> = <c>value</c> in tree "t".
    /// </summary>
    private sealed class HeldMerger : IDisposable
    {
        private readonly ManualResetEventSlim _inOperation = new();
        private readonly ManualResetEventSlim _letGo = new();

        private HeldMerger(StorageEnvironment env, string key, string value) =>
            Operation = env.WriteAsync(tx =>
            {
                _inOperation.Set();
                Assert.True(_letGo.Wait(TimeSpan.FromSeconds(30)));
                tx.OpenTree("t").Put(TestData.Key(key), TestData.Value(value));
            });

        public Task<CommitStats> Operation { get; }

        /// <summary>Submits the operation and returns once the merger is inside it.</summary>
        public static HeldMerger Start(StorageEnvironment env, string key, string value)
        {
            var held = new HeldMerger(env, key, value);
            Assert.True(held._inOperation.Wait(TimeSpan.FromSeconds(30)));
            return held;
        }

        public void Release() => _letGo.Set();

        /// <summary>Lets the operation go if the test did not (the events are left to the collector: the merger may still be returning from them).</summary>
        public void Dispose() => _letGo.Set();
    }
}
