using System.Globalization;
using Storage.CrashHost;
using Storage.Tests.Support;

namespace Storage.Tests.CrashTests;

/// <summary>
/// Kills (SIGKILL) a child process whose environment group (a root and three branches, shared journals) commits in every
/// member at once, many times over the same directories. After each kill every member is opened alone, from its own
/// directory, and must hold every transaction it acknowledged, at most one more, whole, and nothing else; the next round
/// opens them as a group again, so journals go from a member's own files to shared ones and back.
/// </summary>
[Trait("Category", "Crash")]
public sealed class A_group_killed_while_its_members_commit(ITestOutputHelper output)
{
    private static readonly TimeSpan LineTimeout = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task Loses_no_acknowledged_transaction_of_any_member()
    {
        var seed = int.TryParse(System.Environment.GetEnvironmentVariable("STORAGE_KILL_SEED"), NumberStyles.Integer, CultureInfo.InvariantCulture, out var s)
            ? s
            : Random.Shared.Next(1, int.MaxValue);
        var rounds = int.TryParse(System.Environment.GetEnvironmentVariable("STORAGE_GROUP_KILL_ROUNDS"), NumberStyles.Integer, CultureInfo.InvariantCulture, out var r) ? r : 100;
        output.WriteLine($"seed {seed} (replay with STORAGE_KILL_SEED={seed}), {rounds} rounds");
        var random = new Random(seed);
        using var temp = new TempDirectory("group-kill");
        var acknowledged = new long[KillWorkload.GroupMembers];
        var concurrent = Enumerable.Range(0, KillWorkload.GroupMembers).Select(_ => new long[KillWorkload.GroupWorkers]).ToArray();
        var kills = 0;

        for (var round = 0; round < rounds; round++)
        {
            var hostSeed = random.Next(0, 1000);
            var killDuringStartup = random.Next(10) == 0;
            var acksWanted = random.Next(10) == 0 ? random.Next(100, 400) : random.Next(1, 60);
            var context = $"seed {seed}, round {round} (host seed {hostSeed}, {(killDuringStartup ? "kill during startup" : $"kill after {acksWanted} acks")})";
            var before = Path.Combine(TempDirectory.Root, "kill-failures", $"group-seed-{seed}-before-round-{round}");
            TempDirectory.DeleteDirectory(before);
            TempDirectory.CopyDirectory(temp.Path, before);
            using (var host = CrashHostProcess.Start("group", temp.Path, hostSeed.ToString(CultureInfo.InvariantCulture)))
            {
                if (killDuringStartup)
                {
                    await Task.Delay(random.Next(0, 200), TestContext.Current.CancellationToken);
                }
                else
                {
                    var ready = await host.ReadLineAsync(LineTimeout);
                    Assert.True(ready is not null && ready.StartsWith("READY ", StringComparison.Ordinal), $"{context}: the host said '{ready}'; stderr: {host.StandardError}");
                    var next = ready["READY ".Length..].Split(' ').Select(n => long.Parse(n, CultureInfo.InvariantCulture)).ToArray();
                    for (var m = 0; m < next.Length; m++)
                    {
                        Assert.True(next[m] == acknowledged[m] + 1, $"{context}: member {m} resumed at {next[m]} after {acknowledged[m]} acknowledged transactions");
                    }
                    for (var received = 0; received < acksWanted;)
                    {
                        var line = await host.ReadLineAsync(LineTimeout);
                        Assert.True(line is not null, $"{context}: the host exited early (code {(host.HasExited ? host.ExitCode : -1)}; the directory before this round is in {before}); stderr: {host.StandardError}");
                        if (Acknowledge(line, acknowledged, concurrent, context)) received++;
                    }
                }
                await host.KillAsync(LineTimeout);
                kills++;
                foreach (var line in await host.ReadRemainingLinesAsync(LineTimeout))
                {
                    if (!line.StartsWith("READY ", StringComparison.Ordinal)) Acknowledge(line, acknowledged, concurrent, context);
                }
                Assert.True(host.StandardError.Length == 0, $"{context}: the host wrote to stderr (the directory before this round is in {before}): {host.StandardError}");
            }

            var evidence = Path.Combine(TempDirectory.Root, "kill-failures", $"group-seed-{seed}-round-{round}");
            TempDirectory.DeleteDirectory(evidence);
            TempDirectory.CopyDirectory(temp.Path, evidence);
            try
            {
                await Within.Run(() =>
                {
                    for (var m = 0; m < KillWorkload.GroupMembers; m++) acknowledged[m] = VerifyAlone(temp.Path, m, acknowledged[m], concurrent[m], hostSeed, $"{context}, member {m}");
                    return 0L;
                });
            }
            catch (Exception e)
            {
                throw new Xunit.Sdk.XunitException($"{context}: verification failed; the directories as the kill left them are in {evidence}.{System.Environment.NewLine}{e}");
            }
            TempDirectory.DeleteDirectory(evidence);
            TempDirectory.DeleteDirectory(before);
        }

        output.WriteLine($"{kills} kills, acknowledged per member: {string.Join(", ", acknowledged)}; by concurrent committers: {string.Join(", ", concurrent.Select(c => c.Sum()))}");
        Assert.True(acknowledged.All(a => a > 0), "every member had commits acknowledged");
        Assert.True(concurrent.All(c => c.All(n => n > 0)), "every concurrent committer had commits acknowledged");
        Assert.True(kills >= Math.Min(rounds, 100));
    }

    /// <summary>Takes one line of the host's; true for the sequential loop's acknowledgements (the ones a round counts).</summary>
    private static bool Acknowledge(string line, long[] acknowledged, long[][] concurrent, string context)
    {
        var parts = line.Split(' ');
        if (parts[0] == "GCACK")
        {
            var (m, w, i) = (int.Parse(parts[1], CultureInfo.InvariantCulture), int.Parse(parts[2], CultureInfo.InvariantCulture), long.Parse(parts[3], CultureInfo.InvariantCulture));
            Assert.True(i == concurrent[m][w] + 1, $"{context}: GCACK {m} {w} {i} after {concurrent[m][w]}");
            concurrent[m][w] = i;
            return false;
        }
        Assert.True(parts[0] == "GACK", $"{context}: unexpected output '{line}'");
        var member = int.Parse(parts[1], CultureInfo.InvariantCulture);
        var transaction = long.Parse(parts[2], CultureInfo.InvariantCulture);
        Assert.True(transaction == acknowledged[member] + 1, $"{context}: GACK {member} {transaction} after {acknowledged[member]}");
        acknowledged[member] = transaction;
        return true;
    }

    /// <summary>Opens one member alone (not as a group) and checks it; returns the last transaction found.</summary>
    private static long VerifyAlone(string directory, int member, long acknowledged, long[] concurrent, int hostSeed, string context)
    {
        var path = KillWorkload.GroupMember(directory, member);
        if (!Directory.Exists(path))
        {
            Assert.True(acknowledged == 0 && concurrent.All(c => c == 0), $"{context}: the member's directory is missing after {acknowledged} acknowledged transactions");
            return 0;
        }
        using var env = StorageEnvironment.Open(path, KillWorkload.Options(hostSeed));
        using var tx = env.BeginRead();
        A_process_killed_while_committing.VerifyConcurrent(tx, concurrent, context);
        if (!tx.TryOpenTree(KillWorkload.TreeName, out var tree))
        {
            Assert.True(acknowledged == 0, $"{context}: the tree is missing after {acknowledged} acknowledged transactions");
            return 0;
        }
        return A_process_killed_while_committing.VerifySequential(tree, acknowledged, context);
    }
}
