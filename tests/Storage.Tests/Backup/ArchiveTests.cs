using System.Text;
using Storage.Tests.Support;

namespace Storage.Tests.Backup;

/// <summary>The continuous archive: a base and incremental files shipped as commits become durable, restored to any transaction it reached.</summary>
public sealed class The_continuous_archive
{
    private static StorageOptions Options(string archive) => TestOptions.Small with
    {
        MinJournalFileSizeBytes = 64 << 10,
        MaxJournalFileSizeBytes = 128 << 10,
        FlushInterval = TimeSpan.FromMilliseconds(1),
        SyncInterval = TimeSpan.FromMilliseconds(1),
        RetainedJournalBytes = 64L << 20,
        ArchiveDirectory = archive,
        ArchiveInterval = TimeSpan.FromMilliseconds(10),
    };

    private static void Commit(StorageEnvironment env, long i)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("t");
        tree.Put(Encoding.ASCII.GetBytes($"k{i % 250:D3}"), Encoding.ASCII.GetBytes($"v{i}".PadRight(20 + (int)(i % 90), '.')));
        tree.Put("last"u8, Keys.Int64(i));
        tx.Commit();
    }

    private static void AssertState(string directory, long transaction)
    {
        using var env = StorageEnvironment.Open(directory, TestOptions.Small with { CreateIfMissing = false });
        Assert.Equal(transaction, env.GetStats().LastTransactionId);
        using var read = env.BeginRead();
        var tree = read.OpenTree("t");
        Assert.Equal(transaction, Keys.ReadInt64(tree.Get("last"u8)));
        for (var k = 0; k < 250; k++)
        {
            // The newest i <= transaction with i % 250 == k, if any.
            var i = transaction - ((transaction - k) % 250 + 250) % 250;
            var value = tree.Get(Encoding.ASCII.GetBytes($"k{k:D3}"));
            if (i < 1) Assert.Null(value);
            else Assert.Equal(Encoding.ASCII.GetBytes($"v{i}".PadRight(20 + (int)(i % 90), '.')), value);
        }
        Assert.True(env.Check().IsConsistent);
    }

    [Fact]
    public async Task Restores_any_transaction_it_reached_and_goes_on_after_a_reopen_without_a_gap()
    {
        using var dir = new TempDirectory();
        var archive = dir.Combine("archive");
        await using (var env = StorageEnvironment.Open(dir.Combine("source"), Options(archive)))
        {
            for (var i = 1; i <= 400; i++)
            {
                Commit(env, i);
                if (i % 50 == 0) env.ShipArchiveNow();
            }
            var stats = env.GetStats().Archive;
            Assert.Equal(archive, stats.Directory);
            Assert.Equal(1, stats.Bases);
            Assert.True(stats.Segments >= 7, $"{stats.Segments} incremental files");
            Assert.Equal(0, stats.Gaps);
        }
        // Dispose shipped the last commits.
        await StorageEnvironment.RestoreFromArchiveAsync(archive, dir.Combine("latest"), cancellationToken: TestContext.Current.CancellationToken);
        AssertState(dir.Combine("latest"), 400);

        await using (var env = StorageEnvironment.Open(dir.Combine("source"), Options(archive)))
        {
            for (var i = 401; i <= 600; i++) Commit(env, i);
            env.ShipArchiveNow();
            var stats = env.GetStats().Archive;
            Assert.Equal(0, stats.Bases);
            Assert.Equal(0, stats.Gaps);
            Assert.Equal(600, stats.ArchivedThroughTransactionId);
            Assert.Equal(0, stats.LagTransactions);
        }
        var random = new Random(5);
        for (var k = 0; k < 20; k++)
        {
            var wanted = random.NextInt64(Math.Max(1, 0), 601);
            var chainStart = Directory.GetFiles(archive, "full-*").Select(f => long.Parse(Path.GetFileName(f)[5..25], System.Globalization.CultureInfo.InvariantCulture)).Min();
            if (wanted < chainStart) wanted = chainStart;
            var target = dir.Combine($"at-{k}");
            var restored = await StorageEnvironment.RestoreFromArchiveAsync(archive, target, wanted, cancellationToken: TestContext.Current.CancellationToken);
            Assert.Equal(wanted, restored.TransactionId);
            AssertState(target, wanted);
        }
    }

    [Fact]
    public async Task Restores_to_a_point_in_time_the_last_transaction_shipped_by_then()
    {
        using var dir = new TempDirectory();
        var archive = dir.Combine("archive");
        var shipped = new List<(DateTime At, long Through)>();
        await using (var env = StorageEnvironment.Open(dir.Combine("source"), Options(archive) with { ArchiveInterval = TimeSpan.FromDays(1) }))
        {
            for (var i = 1; i <= 200; i++)
            {
                Commit(env, i);
                if (i % 40 != 0) continue;
                env.ShipArchiveNow();
                shipped.Add((DateTime.UtcNow, env.GetStats().Archive.ArchivedThroughTransactionId));
            }
        }
        Assert.Equal([40L, 80, 120, 160, 200], shipped.Select(s => s.Through));
        foreach (var (at, through) in shipped)
        {
            Assert.Equal(through, StorageEnvironment.ArchiveTransactionAt(archive, at));
            var target = dir.Combine($"at-{through}");
            var restored = await StorageEnvironment.RestoreFromArchiveAsync(archive, target, at, cancellationToken: TestContext.Current.CancellationToken);
            Assert.Equal(through, restored.TransactionId);
            AssertState(target, through);
        }
        Assert.Throws<ArgumentOutOfRangeException>(() => StorageEnvironment.ArchiveTransactionAt(archive, new DateTime(2000, 1, 1, 0, 0, 0, DateTimeKind.Utc)));
    }

    [Fact]
    public async Task Refuses_commits_past_its_lag_bound_only_when_asked()
    {
        using var dir = new TempDirectory();
        var options = Options(dir.Combine("archive")) with { ArchiveInterval = TimeSpan.FromDays(1), ArchiveMaxLagTransactions = 5 };
        await using var env = StorageEnvironment.Open(dir.Combine("source"), options);
        env.ShipArchiveNow();
        for (var i = 1; i <= 5; i++) Commit(env, i);
        var error = Assert.Throws<StorageException>(() => Commit(env, 6));
        Assert.Equal(StorageErrorCode.ArchiveBehind, error.ErrorCode);
        Assert.Equal(5, env.GetStats().LastTransactionId);
        Assert.Equal(5, env.GetStats().Archive.LagTransactions);
        env.ShipArchiveNow();
        Commit(env, 6);
        Assert.Equal(6, env.GetStats().LastTransactionId);
    }

    [Fact]
    public void An_archive_directory_of_another_environment_is_refused_on_open()
    {
        using var dir = new TempDirectory();
        var archive = dir.Combine("archive");
        using (var env = StorageEnvironment.Open(dir.Combine("one"), Options(archive)))
        {
            Commit(env, 1);
            env.ShipArchiveNow();
        }
        var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(dir.Combine("two"), Options(archive)));
        Assert.Equal(StorageErrorCode.NotAnEnvironment, error.ErrorCode);
        Assert.Contains("Give each environment its own archive directory", error.Message);
    }
}
