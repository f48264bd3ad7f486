using FsCheck;
using FsCheck.Fluent;
using Storage.Tests.Support;

namespace Storage.Tests.ModelTests;

/// <summary>One step of a model-based run of backups.</summary>
public abstract record BackupCommand
{
    /// <summary>Puts and deletes of keys 0..31 in one durable transaction.</summary>
    public sealed record Transaction((int Key, int ValueSize, int Seed)[] Writes) : BackupCommand
    {
        public override string ToString() => $"Tx({Writes.Length} writes)";
    }

    /// <summary>A full backup: a new chain starts.</summary>
    public sealed record Full : BackupCommand;

    /// <summary>An incremental backup after the newest chain's end.</summary>
    public sealed record Incremental : BackupCommand;

    /// <summary>A restore of one chain (by its index among those taken, wrapped) to a transaction at a fraction of its span.</summary>
    public sealed record Restore(int Chain, int Permille) : BackupCommand;

    /// <summary>A clean close and open.</summary>
    public sealed record Reopen : BackupCommand;
}

/// <summary>
/// Random transactions, full and incremental backups, reopens and restores of any chain to any transaction it spans,
/// against an in-memory model of every committed state: each restore must be exactly the model's state of its
/// transaction. One run uses a fixed seed, one a fresh seed printed on failure (STORAGE_MODEL_SEED replays it).
/// </summary>
public sealed class Backups_restore_exactly_the_models_state_of_any_transaction
{
    private const ulong FixedSeed = 0x5EED_0038;

    private static readonly StorageOptions Options = TestOptions.Small with
    {
        MinJournalFileSizeBytes = 64 << 10,
        MaxJournalFileSizeBytes = 128 << 10,
        FlushInterval = TimeSpan.FromMilliseconds(2),
        SyncInterval = TimeSpan.FromMilliseconds(5),
        RetainedJournalBytes = 1L << 30,
    };

    /// <summary>Restores compared with the model, over the runs of this process: the fixed set must reach some.</summary>
    private static int _restoresChecked;

    [Fact]
    public void For_a_fixed_set_of_random_command_sequences()
    {
        var before = Volatile.Read(ref _restoresChecked);
        Check(FixedSeed, ModelCheck.Tests(25, costRatio: 20));
        Assert.True(Volatile.Read(ref _restoresChecked) - before >= 10, $"the fixed sequences checked {Volatile.Read(ref _restoresChecked) - before} restores");
    }

    [Fact]
    public void For_fresh_random_command_sequences() =>
        Check(ModelCheck.FreshSeed(), ModelCheck.Tests(25, costRatio: 20));

    private static Gen<BackupCommand> Command()
    {
        var write = from key in Gen.Choose(0, 31)
                    from size in Gen.Frequency((1, Gen.Constant(-1)), (6, Gen.Choose(0, 300)), (1, Gen.Choose(2000, 12_000)))
                    from seed in Gen.Choose(0, 1_000_000)
                    select (key, size, seed);
        var transaction = from count in Gen.Choose(1, 10)
                          from writes in Gen.ArrayOf(write, count)
                          select (BackupCommand)new BackupCommand.Transaction(writes);
        var restore = from chain in Gen.Choose(0, 1000)
                      from permille in Gen.Choose(0, 1000)
                      select (BackupCommand)new BackupCommand.Restore(chain, permille);
        return Gen.Frequency(
            (30, transaction),
            (2, Gen.Constant((BackupCommand)new BackupCommand.Full())),
            (6, Gen.Constant((BackupCommand)new BackupCommand.Incremental())),
            (4, restore),
            (1, Gen.Constant((BackupCommand)new BackupCommand.Reopen())));
    }

    private static void Check(ulong seed, int tests)
    {
        var scenarios = from count in Gen.Choose(1, 60)
                        from commands in Gen.ArrayOf(Command(), count)
                        select commands;
        var property = Prop.ForAll(scenarios.ToArbitrary(), Run);
        ModelCheck.Run(ModelCheck.Config(seed, tests), property, seed, "backup run");
    }

    private static void Run(BackupCommand[] commands)
    {
        using var temp = new TempDirectory("backup-model");
        var directory = temp.Combine("source");
        var backups = temp.Combine("backups");
        // The model: the state after every transaction, by its id (the empty state is transaction 0).
        var states = new Dictionary<long, SortedDictionary<byte[], byte[]>> { [0] = OrdinalBytes.NewModel() };
        var current = OrdinalBytes.NewModel();
        var chains = new List<(List<string> Files, long Start, long End)>();
        var env = StorageEnvironment.Open(directory, Options);
        var restores = 0;
        try
        {
            for (var step = 0; step < commands.Length; step++)
            {
                var context = $"step {step} ({commands[step]})";
                switch (commands[step])
                {
                    case BackupCommand.Transaction t:
                        using (var tx = env.BeginWrite())
                        {
                            var tree = tx.OpenOrCreateTree("t");
                            foreach (var (key, size, seed) in t.Writes)
                            {
                                var k = Storage.Tests.Support.TestData.Key($"k{key:D2}");
                                if (size < 0)
                                {
                                    tree.Delete(k);
                                    current.Remove(k);
                                }
                                else
                                {
                                    var value = new byte[size];
                                    new Random(seed).NextBytes(value);
                                    tree.Put(k, value);
                                    current[k] = value;
                                }
                            }
                            tx.Commit();
                        }
                        states[env.GetStats().LastTransactionId] = new SortedDictionary<byte[], byte[]>(current, OrdinalBytes.Instance);
                        break;
                    case BackupCommand.Full:
                        var full = env.BackupAsync(backups).GetAwaiter().GetResult();
                        chains.Add(([full.Path!], full.TransactionId, full.TransactionId));
                        break;
                    case BackupCommand.Incremental when chains.Count > 0:
                        var (files, start, end) = chains[^1];
                        var incremental = env.BackupIncrementalAsync(backups, end).GetAwaiter().GetResult();
                        chains[^1] = ([.. files, incremental.Path!], start, incremental.TransactionId);
                        break;
                    case BackupCommand.Restore r when chains.Count > 0:
                        var chain = chains[r.Chain % chains.Count];
                        var wanted = chain.Start + (chain.End - chain.Start) * r.Permille / 1000;
                        var target = temp.Combine($"restored-{restores++}");
                        var restored = StorageEnvironment.RestoreAsync(chain.Files, target, wanted).GetAwaiter().GetResult();
                        if (restored.TransactionId != wanted) throw new InvalidOperationException($"{context}: restored transaction {restored.TransactionId}, not {wanted}");
                        AssertState(target, states, wanted, context);
                        Interlocked.Increment(ref _restoresChecked);
                        Directory.Delete(target, recursive: true);
                        break;
                    case BackupCommand.Reopen:
                        env.Dispose();
                        env = StorageEnvironment.Open(directory, Options);
                        break;
                }
            }
        }
        finally
        {
            env.Dispose();
        }
    }

    private static void AssertState(string directory, Dictionary<long, SortedDictionary<byte[], byte[]>> states, long transaction, string context)
    {
        // A transaction id the model has no state for committed nothing the model tracks (none here): the state before it.
        var id = transaction;
        while (!states.ContainsKey(id)) id--;
        var expected = states[id];
        using var env = StorageEnvironment.Open(directory, TestOptions.Small with { CreateIfMissing = false });
        using var read = env.BeginRead();
        var actual = read.TryOpenTree("t", out var tree) ? tree.Prefix([]).ToList() : [];
        if (actual.Count != expected.Count || !actual.Zip(expected).All(p => p.First.Key.AsSpan().SequenceEqual(p.Second.Key) && p.First.Value.AsSpan().SequenceEqual(p.Second.Value)))
        {
            throw new InvalidOperationException($"{context}: the restore of transaction {transaction} holds {actual.Count} entries that differ from the model's {expected.Count}");
        }
        if (!env.Check().IsConsistent) throw new InvalidOperationException($"{context}: the restore of transaction {transaction} is not consistent");
    }
}
