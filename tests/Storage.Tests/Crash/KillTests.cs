using System.Globalization;
using Storage.CrashHost;
using Storage.Tests.Support;

namespace Storage.Tests.CrashTests;

/// <summary>
/// Kills (SIGKILL) a child process that commits in a loop, at random moments, many times over the same
/// directory, and checks after each kill that every acknowledged transaction is whole, that at most one
/// unacknowledged one is there (and then whole), and that nothing else is. Beside the loop, concurrent committers
/// (blocking and asynchronous, sharing group commits) write their own keys, checked the same way per committer.
/// </summary>
[Trait("Category", "Crash")]
public sealed class A_process_killed_while_committing(ITestOutputHelper output)
{
    private static readonly TimeSpan LineTimeout = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task Loses_no_acknowledged_transaction_and_never_shows_half_of_one()
    {
        var seed = int.TryParse(System.Environment.GetEnvironmentVariable("STORAGE_KILL_SEED"), NumberStyles.Integer, CultureInfo.InvariantCulture, out var s)
            ? s
            : Random.Shared.Next(1, int.MaxValue);
        var rounds = int.TryParse(System.Environment.GetEnvironmentVariable("STORAGE_KILL_ROUNDS"), NumberStyles.Integer, CultureInfo.InvariantCulture, out var r) ? r : 120;
        output.WriteLine($"seed {seed} (replay with STORAGE_KILL_SEED={seed}), {rounds} rounds");
        var random = new Random(seed);
        using var temp = new TempDirectory("kill");
        long acknowledged = 0;
        var concurrent = new long[KillWorkload.Workers];
        var kills = 0;
        var started = System.Diagnostics.Stopwatch.StartNew();

        for (var round = 0; round < rounds; round++)
        {
            var hostSeed = random.Next(0, 1000);
            // Mostly kill after some acknowledgements; sometimes during startup and recovery.
            var killDuringStartup = random.Next(10) == 0;
            var acksWanted = random.Next(10) == 0 ? random.Next(100, 300) : random.Next(1, 40);
            var context = $"seed {seed}, round {round} (host seed {hostSeed}, {(killDuringStartup ? "kill during startup" : $"kill after {acksWanted} acks")})";

            // Keep the directory as the previous round left it, so that a failure of this round can be examined.
            var before = Path.Combine(TempDirectory.Root, "kill-failures", $"seed-{seed}-before-round-{round}");
            TempDirectory.DeleteDirectory(before);
            TempDirectory.CopyDirectory(temp.Path, before);
            using (var host = CrashHostProcess.Start(temp.Path, hostSeed.ToString(CultureInfo.InvariantCulture)))
            {
                if (killDuringStartup)
                {
                    await Task.Delay(random.Next(0, 150), TestContext.Current.CancellationToken);
                }
                else
                {
                    var ready = await host.ReadLineAsync(LineTimeout);
                    Assert.True(ready is not null && ready.StartsWith("READY ", StringComparison.Ordinal), $"{context}: the host said '{ready}'; stderr: {host.StandardError}");
                    var next = long.Parse(ready["READY ".Length..], CultureInfo.InvariantCulture);
                    Assert.True(next == acknowledged + 1, $"{context}: the host resumed at {next} after {acknowledged} acknowledged transactions");
                    for (var received = 0; received < acksWanted;)
                    {
                        var line = await host.ReadLineAsync(LineTimeout);
                        Assert.True(line is not null, $"{context}: the host exited early (code {(host.HasExited ? host.ExitCode : -1)}; the directory before this round is in {before}); stderr: {host.StandardError}");
                        if (Acknowledge(line, ref acknowledged, concurrent, context)) received++;
                    }
                }
                await host.KillAsync(LineTimeout);
                kills++;
                // Whatever it printed before it died was acknowledged too.
                foreach (var line in await host.ReadRemainingLinesAsync(LineTimeout)) Acknowledge(line, ref acknowledged, concurrent, context);
                Assert.True(host.StandardError.Length == 0, $"{context}: the host wrote to stderr (the directory before this round is in {before}): {host.StandardError}");
            }

            // Keep the directory as the kill left it until it verified, so that a failure can be examined.
            var evidence = Path.Combine(TempDirectory.Root, "kill-failures", $"seed-{seed}-round-{round}");
            TempDirectory.DeleteDirectory(evidence);
            TempDirectory.CopyDirectory(temp.Path, evidence);
            long last;
            try
            {
                last = await Within.Run(() => Verify(temp.Path, acknowledged, concurrent, hostSeed, context));
            }
            catch (Exception e)
            {
                throw new Xunit.Sdk.XunitException($"{context}: verification failed; the directory as the kill left it is in {evidence}.{System.Environment.NewLine}{e}");
            }
            TempDirectory.DeleteDirectory(evidence);
            TempDirectory.DeleteDirectory(before);
            acknowledged = Math.Max(acknowledged, last);
        }

        output.WriteLine($"{kills} kills, {acknowledged} transactions acknowledged, {concurrent.Sum()} by concurrent committers, {started.Elapsed.TotalSeconds:0.0} s");
        Assert.True(concurrent.All(c => c > 0), "every concurrent committer had commits acknowledged");
        Assert.True(kills >= Math.Min(rounds, 100));
    }

    private static bool Acknowledge(string line, ref long acknowledged, long[] concurrent, string context)
    {
        if (line.StartsWith("READY ", StringComparison.Ordinal)) return false;
        if (line.StartsWith("CACK ", StringComparison.Ordinal))
        {
            var parts = line.Split(' ');
            var worker = int.Parse(parts[1], CultureInfo.InvariantCulture);
            var transaction = long.Parse(parts[2], CultureInfo.InvariantCulture);
            Assert.True(transaction == concurrent[worker] + 1, $"{context}: CACK {worker} {transaction} after {concurrent[worker]}");
            concurrent[worker] = transaction;
            return false;
        }
        Assert.True(line.StartsWith("ACK ", StringComparison.Ordinal), $"{context}: unexpected output '{line}'");
        var id = long.Parse(line["ACK ".Length..], CultureInfo.InvariantCulture);
        Assert.True(id == acknowledged + 1, $"{context}: ACK {id} after ACK {acknowledged}");
        acknowledged = id;
        return true;
    }

    /// <summary>Opens the killed host's environment and checks it against the acknowledgements; returns the last transaction found.</summary>
    private static long Verify(string directory, long acknowledged, long[] concurrent, int hostSeed, string context)
    {
        using var env = StorageEnvironment.Open(directory, KillWorkload.Options(hostSeed));
        using var tx = env.BeginRead();
        VerifyConcurrent(tx, concurrent, context);
        if (!tx.TryOpenTree(KillWorkload.TreeName, out var tree))
        {
            Assert.True(acknowledged == 0, $"{context}: the tree is missing after {acknowledged} acknowledged transactions");
            return 0;
        }
        return VerifySequential(tree, acknowledged, context, KillWorkload.Pipelines(hostSeed) ? KillWorkload.PipelineDepth : 1);
    }

    /// <summary>
    /// The sequential workload's tree: every acknowledged transaction whole, at most <paramref name="inFlight"/> more (a
    /// pipelined writer's commits not yet acknowledged; then whole), nothing else; returns the last transaction found.
    /// </summary>
    internal static long VerifySequential(Tree tree, long acknowledged, string context, int inFlight = 1)
    {
        long last = 0;
        if (tree.TryGet(KillWorkload.LastKey, out var lastValue)) last = KillWorkload.ParseLast(lastValue);
        Assert.True(last >= acknowledged, $"{context}: 'last' is {last} but transaction {acknowledged} was acknowledged");
        Assert.True(last <= acknowledged + inFlight, $"{context}: 'last' is {last}, more than {inFlight} past the acknowledged {acknowledged}");

        // Exactly the keys of transactions last-Window+1 .. last, each with its value, plus "last".
        var expected = OrdinalBytes.NewModel();
        for (var i = Math.Max(1, last - KillWorkload.Window + 1); i <= last; i++)
        {
            for (var j = 0; j < KillWorkload.KeyCount(i); j++) expected[KillWorkload.Key(i, j)] = KillWorkload.Value(i, j);
        }
        if (last > 0) expected[KillWorkload.LastKey] = KillWorkload.LastValue(last);
        TreeAssert.Equal(expected, tree, $"{context}: after transaction {last} ({acknowledged} acknowledged)");
        return last;
    }

    /// <summary>Each concurrent committer's keys: every acknowledged transaction whole, at most one more, nothing else; the counts move to what was found.</summary>
    internal static void VerifyConcurrent(ReadTransaction tx, long[] concurrent, string context)
    {
        if (!tx.TryOpenTree(KillWorkload.ConcurrentTreeName, out var tree))
        {
            Assert.True(concurrent.All(c => c == 0), $"{context}: the concurrent committers' tree is missing after {concurrent.Sum()} acknowledged commits");
            return;
        }
        var expected = OrdinalBytes.NewModel();
        var found = new long[concurrent.Length];
        for (var w = 0; w < concurrent.Length; w++)
        {
            long last = 0;
            if (tree.TryGet(KillWorkload.ConcurrentLastKey(w), out var lastValue)) last = KillWorkload.ParseLast(lastValue);
            Assert.True(last >= concurrent[w], $"{context}: committer {w}'s last is {last} but its transaction {concurrent[w]} was acknowledged");
            Assert.True(last <= concurrent[w] + 1, $"{context}: committer {w}'s last is {last}, more than one past its acknowledged {concurrent[w]}");
            for (var i = Math.Max(1, last - KillWorkload.ConcurrentWindow + 1); i <= last; i++) expected[KillWorkload.ConcurrentKey(w, i)] = KillWorkload.ConcurrentValue(w, i);
            if (last > 0) expected[KillWorkload.ConcurrentLastKey(w)] = KillWorkload.LastValue(last);
            found[w] = last;
        }
        TreeAssert.Equal(expected, tree, $"{context}: concurrent committers after [{string.Join(", ", found)}] (acknowledged [{string.Join(", ", concurrent)}])");
        found.CopyTo(concurrent, 0);
    }
}
