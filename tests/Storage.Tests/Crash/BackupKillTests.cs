using Storage.CrashHost;
using Storage.Tests.Support;

namespace Storage.Tests.Crash;

/// <summary>
/// A process killed at random points while it commits with a continuous archive and takes full and incremental backups
/// (STORAGE_BACKUP_KILL_ROUNDS kills, default 10): the environment keeps every acknowledged commit, the archive goes on
/// after the reopen without a gap, and a backup file the kill left half written is refused (or, if it was whole but not
/// yet renamed, restores exactly its transaction).
/// </summary>
[Trait("Category", "Crash")]
public sealed class Killed_while_backing_up_and_archiving(ITestOutputHelper output)
{
    private static readonly TimeSpan HostTimeout = TimeSpan.FromSeconds(60);

    private static int Rounds => int.TryParse(Environment.GetEnvironmentVariable("STORAGE_BACKUP_KILL_ROUNDS"), out var n) && n > 0 ? n : 10;

    [Fact]
    public async Task Loses_nothing_acknowledged_and_the_archive_continues_without_a_gap()
    {
        using var temp = new TempDirectory();
        var (dir, archive, backups) = (temp.Combine("env"), temp.Combine("archive"), temp.Combine("backups"));
        var random = new Random(31);
        var partials = (Refused: 0, Whole: 0);
        long lastAcked = 0;
        for (var round = 0; round < Rounds; round++)
        {
            using (var host = CrashHostProcess.Start("archive", dir, archive, backups))
            {
                var ready = await host.ReadLineAsync(HostTimeout);
                Assert.True(ready is not null && ready.StartsWith("READY ", StringComparison.Ordinal), $"round {round}: {ready} {host.StandardError}");
                Assert.Equal(lastAcked + 1, long.Parse(ready[6..], System.Globalization.CultureInfo.InvariantCulture));
                var acks = 10 + random.Next(200);
                for (var a = 0; a < acks; a++)
                {
                    var line = await host.ReadLineAsync(HostTimeout);
                    Assert.True(line is not null && line.StartsWith("ACK ", StringComparison.Ordinal), $"round {round}: {line} {host.StandardError}");
                    lastAcked = long.Parse(line[4..], System.Globalization.CultureInfo.InvariantCulture);
                }
                await host.KillAsync(HostTimeout);
            }

            // Every acknowledged commit is there, whole.
            await using (var env = StorageEnvironment.Open(dir, ArchiveWorkload.Options(archive)))
            {
                using (var read = env.BeginRead())
                {
                    var tree = read.OpenTree("t");
                    var last = Keys.ReadInt64(tree.Get("last"u8));
                    Assert.True(last >= lastAcked, $"round {round}: the environment holds {last}, {lastAcked} was acknowledged");
                    AssertModel(tree, last);
                    lastAcked = last;
                }
                // The archive reaches the environment's last transaction from where it was, without a new base.
                env.ShipArchiveNow();
                var stats = env.GetStats();
                Assert.Equal(stats.LastTransactionId, stats.Archive.ArchivedThroughTransactionId);
                Assert.Equal(0, stats.Archive.Gaps);
                Assert.True(stats.Archive.Bases == 0 || round == 0 && stats.Archive.Bases <= 1, $"round {round}: {stats.Archive.Bases} new bases");
            }

            // Half-written backups are refused; one that was whole but not yet renamed restores exactly its transaction.
            foreach (var partial in new[] { archive, backups }.Where(Directory.Exists).SelectMany(d => Directory.GetFiles(d, ".backup-*.partial")))
            {
                var target = temp.Combine($"partial-{round}-{Path.GetFileNameWithoutExtension(partial)}");
                try
                {
                    var restored = await StorageEnvironment.RestoreAsync(partial, target, cancellationToken: TestContext.Current.CancellationToken);
                    partials.Whole++;
                    AssertRestored(target, restored.TransactionId);
                }
                catch (StorageCorruptedException)
                {
                    partials.Refused++;
                    Assert.False(Directory.Exists(target));
                }
                File.Delete(partial);
            }
        }
        var latest = temp.Combine("latest");
        var fromArchive = await StorageEnvironment.RestoreFromArchiveAsync(archive, latest, cancellationToken: TestContext.Current.CancellationToken);
        Assert.True(fromArchive.TransactionId >= lastAcked);
        AssertRestored(latest, fromArchive.TransactionId);
        output.WriteLine($"{Rounds} kills up to commit {lastAcked}: nothing acknowledged lost, the archive went on without a gap; " +
            $"half-written backup files: {partials.Refused} refused, {partials.Whole} whole (killed before the rename) and restored exactly.");
    }

    private static void AssertRestored(string directory, long transaction)
    {
        using var env = StorageEnvironment.Open(directory, TestOptions.Small with { CreateIfMissing = false });
        Assert.Equal(transaction, env.GetStats().LastTransactionId);
        using var read = env.BeginRead();
        if (!read.TryOpenTree("t", out var tree))
        {
            Assert.True(transaction == 0, $"transaction {transaction} without tree t");
            return;
        }
        var last = Keys.ReadInt64(tree.Get("last"u8));
        Assert.Equal(transaction, last);
        AssertModel(tree, last);
        Assert.True(env.Check().IsConsistent);
    }

    /// <summary>Tree "t" after commits 1 to <paramref name="last"/> of the workload.</summary>
    private static void AssertModel(Tree tree, long last)
    {
        for (var k = 0; k < 300; k++)
        {
            var i = last - ((last - k) % 300 + 300) % 300;
            var value = tree.Get(ArchiveWorkload.Key(k));
            if (i < 1) Assert.Null(value);
            else Assert.Equal(ArchiveWorkload.Value(i), value);
        }
    }
}
