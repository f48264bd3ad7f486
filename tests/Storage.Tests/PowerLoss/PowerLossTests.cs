using Storage.Tests.Support;

namespace Storage.Tests.PowerLoss;

/// <summary>
/// Power cuts, not process kills (a killed process keeps the page cache): a random history of transactions runs
/// with every file change recorded; then, at every sync point of the history (each durable journal write, each
/// fsync, just before each fsync), a crash state is built in which unsynced writes are dropped, kept or torn, and
/// opened. Every acknowledged transaction must be there and nothing partial: the state is exactly the last
/// acknowledged transaction's, or the next one's when its journal write had completed.
/// </summary>
/// <remarks>
/// CI runs <see cref="DefaultTransactions"/> transactions of one seed; <c>STORAGE_POWERLOSS_TRANSACTIONS</c> and
/// <c>STORAGE_POWERLOSS_SEEDS</c> set a longer run (e.g. 1000 and 20).
/// </remarks>
public sealed class A_power_cut_at_any_sync_point(ITestOutputHelper output)
{
    private const int DefaultTransactions = 120;
    private const int DefaultSeeds = 1;

    public static TheoryData<string> Configurations => new() { "busy flusher", "journal only", "buffered journal writes" };

    [Theory]
    [MemberData(nameof(Configurations))]
    public async Task Loses_no_acknowledged_transaction_and_shows_none_in_part(string configuration)
    {
        var transactions = int.TryParse(Environment.GetEnvironmentVariable("STORAGE_POWERLOSS_TRANSACTIONS"), out var t) && t > 0 ? t : DefaultTransactions;
        var seeds = int.TryParse(Environment.GetEnvironmentVariable("STORAGE_POWERLOSS_SEEDS"), out var s) && s > 0 ? s : DefaultSeeds;
        var points = 0;
        var recoveredNext = 0;
        for (var seed = 1; seed <= seeds; seed++)
        {
            var (p, n) = await Within.Run(() => RunSeed(seed, transactions, configuration), TimeSpan.FromMinutes(30));
            points += p;
            recoveredNext += n;
        }
        output.WriteLine($"{configuration}: {seeds} seed(s) x {transactions} transactions: {points} crash states opened, every one exact " +
            $"({recoveredNext} of them showed the transaction whose journal write had completed before its commit returned)");
    }

    private static (int Points, int RecoveredNext) RunSeed(int seed, int transactions, string configuration)
    {
        using var temp = new TempDirectory("powerloss");
        var dir = temp.Combine("env");
        Directory.CreateDirectory(dir);
        var recorder = new PowerLossRecorder(dir);
        // The journal's files are small, so each one's first writes (which take the two write methods in turn) are
        // most of them; "buffered journal writes" makes every entry a buffered write and a sync.
        var options = configuration switch
        {
            "journal only" => TestOptions.JournalOnly with { MinJournalFileSizeBytes = 64 << 10, MaxJournalFileSizeBytes = 128 << 10 },
            "buffered journal writes" => TestOptions.JournalOnly with
            {
                MinJournalFileSizeBytes = 64 << 10, MaxJournalFileSizeBytes = 128 << 10, JournalWriteMethod = JournalWriteMethod.BufferedThenSync,
            },
            _ => TestOptions.Small with { FlushInterval = TimeSpan.FromMilliseconds(2), SyncInterval = TimeSpan.FromMilliseconds(5), ScratchBudgetBytes = 1 << 20, MaxJournalFileSizeBytes = 128 << 10 },
        };
        var models = new List<PowerLossModel> { PowerLossModel.Empty };
        using (var env = StorageEnvironment.Open(dir, options.WithFaults(recorder)))
        {
            for (var t = 1; t <= transactions; t++)
            {
                var operations = PowerLossModel.Operations(seed, t);
                using (var tx = env.BeginWrite())
                {
                    foreach (var (tree, key, value) in operations)
                    {
                        var target = tx.OpenOrCreateTree(tree);
                        if (value is null) target.Delete(key);
                        else target.Put(key, TestData.Value(value.Value.Seed, value.Value.Length));
                    }
                    Assert.Equal(t, tx.Commit().TransactionId);
                }
                recorder.Acknowledged(t);
                models.Add(models[^1].With(operations));
                if (configuration == "journal only" && t % 50 == 0) env.Checkpoint();
            }
        }

        // Crash states are only opened and read back: memory-backed files make their many fsyncs free (journal writes there
        // fall back from O_DIRECT to O_DSYNC, which recovery does not care about).
        using var crashes = Directory.Exists("/dev/shm") ? new TempDirectory("powerloss-states", "/dev/shm") : new TempDirectory("powerloss-states");
        var states = new CrashStates();
        var random = new Random(seed * 31 + configuration.Length);
        var events = recorder.Events;
        var points = 0;
        var recoveredNext = 0;
        var recoveryOptions = options.WithFaults(null);
        foreach (var e in events)
        {
            if (CrashStates.IsDurable(e) && e.Kind == IoKind.Sync) recoveredNext += Verify(states, crashes, ref points, random, models, recoveryOptions, "before a sync");
            states.Apply(e);
            if (CrashStates.IsDurable(e)) recoveredNext += Verify(states, crashes, ref points, random, models, recoveryOptions, $"after {e.Kind} of {e.Path}");
        }
        return (points, recoveredNext);
    }

    /// <summary>STORAGE_POWERLOSS_KEEP names a directory that receives each failing crash state as it was before it was opened.</summary>
    private static readonly string? s_keep = Environment.GetEnvironmentVariable("STORAGE_POWERLOSS_KEEP");

    private static void Keep(string target)
    {
        if (string.IsNullOrEmpty(s_keep)) return;
        Directory.Move(Path.Combine(s_keep, "pristine"), Path.Combine(s_keep, Path.GetFileName(target) + "-" + Guid.NewGuid().ToString("N")[..6]));
    }

    private static int Verify(CrashStates states, TempDirectory temp, ref int points, Random random, List<PowerLossModel> models, StorageOptions options, string where)
    {
        var target = temp.Combine($"crash-{points++}");
        states.Materialize(target, random);
        var acknowledged = states.Acknowledged;
        if (!string.IsNullOrEmpty(s_keep))
        {
            TempDirectory.DeleteDirectory(Path.Combine(s_keep, "pristine"));
            TempDirectory.CopyDirectory(target, Path.Combine(s_keep, "pristine"));
        }
        try
        {
            using var env = StorageEnvironment.Open(target, options);
            var last = env.GetStats().LastTransactionId;
            if (last < acknowledged || last > acknowledged + 1 || last >= models.Count)
            {
                throw new Xunit.Sdk.XunitException($"crash state {points - 1} ({where}): opened at transaction {last}, {acknowledged} were acknowledged");
            }
            using var tx = env.BeginRead();
            models[(int)last].AssertEqual(tx, $"crash state {points - 1} ({where}), transaction {last}");
            return last > acknowledged ? 1 : 0;
        }
        catch (StorageException e)
        {
            Keep(target);
            throw new Xunit.Sdk.XunitException($"crash state {points - 1} ({where}), {acknowledged} acknowledged: the open failed: {e}");
        }
        catch (Xunit.Sdk.XunitException)
        {
            Keep(target);
            throw;
        }
        finally
        {
            TempDirectory.DeleteDirectory(target);
        }
    }
}
