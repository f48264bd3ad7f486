using System.Globalization;
using FsCheck;
using FsCheck.Fluent;
using Microsoft.FSharp.Core;
using Storage.Tests.Support;
using TestData = Storage.Tests.Support.TestData;

namespace Storage.Tests.ModelTests;

/// <summary>One step of a model-based run over an environment group.</summary>
public abstract record GroupCommand
{
    /// <summary>A transaction in one member: puts and deletes of keys 0..31, committed durably or lazily.</summary>
    public sealed record Transaction(int Member, (int Key, int ValueSize, int Seed)[] Writes, bool Lazy) : GroupCommand
    {
        public override string ToString() => $"Tx(m{Member}, {Writes.Length} writes{(Lazy ? ", lazy" : "")})";
    }

    public sealed record Checkpoint(int Member) : GroupCommand;

    /// <summary>Every member stops as in a killed process, then the group opens again.</summary>
    public sealed record CrashGroup : GroupCommand;

    /// <summary>A crash, then every member opened alone (checked), closed, and the group opened again.</summary>
    public sealed record CrashAndOpenAlone : GroupCommand;

    /// <summary>A clean close of the group, then it opens again.</summary>
    public sealed record Reopen : GroupCommand;
}

/// <summary>
/// Random transactions in the members of a group with shared journals (durable and lazy), checkpoints, crashes of the
/// whole group, members opened alone after a crash, and clean reopens, against one sorted dictionary per member. After a
/// crash each member holds exactly the state after one of its commits, no older than its last durable one (a lazy commit
/// may be lost, and a durable commit of any member makes every member's earlier lazy ones durable, which the model
/// allows). One run uses a fixed seed; the other a fresh one printed on failure (STORAGE_MODEL_SEED replays it;
/// STORAGE_MODEL_REPLAY="seed,gamma,size" replays the one failing case FsCheck names, and STORAGE_MODEL_KEEP=path keeps a
/// copy of the directories at each crash).
/// </summary>
public sealed class A_group_behaves_like_one_sorted_dictionary_per_member
{
    private const int Members = 3;
    private const ulong FixedSeed = 0x5EED_0007;

    private static readonly StorageOptions[] Options =
    [
        TestOptions.JournalOnly with { MinJournalFileSizeBytes = 64 << 10, MaxJournalFileSizeBytes = 128 << 10 },
        TestOptions.Small with { MinJournalFileSizeBytes = 64 << 10, MaxJournalFileSizeBytes = 128 << 10, FlushInterval = TimeSpan.FromMilliseconds(2), SyncInterval = TimeSpan.FromMilliseconds(5), ScratchBudgetBytes = 1 << 20 },
    ];

    [Fact]
    public void For_a_fixed_set_of_random_command_sequences() => Check(FixedSeed, ModelCheck.Tests(60));

    [Fact]
    public void For_fresh_random_command_sequences() =>
        Check(ModelCheck.FreshSeed(), ModelCheck.Tests(60));

    private static Gen<GroupCommand> Command()
    {
        var write = from key in Gen.Choose(0, 31)
                    from size in Gen.Frequency((1, Gen.Constant(-1)), (6, Gen.Choose(0, 300)), (1, Gen.Choose(2000, 12_000)))
                    from seed in Gen.Choose(0, 1_000_000)
                    select (key, size, seed);
        var transaction = from member in Gen.Choose(0, Members - 1)
                          from count in Gen.Choose(1, 12)
                          from writes in Gen.ArrayOf(write, count)
                          from lazy in Gen.Frequency((3, Gen.Constant(false)), (1, Gen.Constant(true)))
                          select (GroupCommand)new GroupCommand.Transaction(member, writes, lazy);
        return Gen.Frequency(
            (40, transaction),
            (3, Gen.Choose(0, Members - 1).Select(m => (GroupCommand)new GroupCommand.Checkpoint(m))),
            (2, Gen.Constant((GroupCommand)new GroupCommand.CrashGroup())),
            (2, Gen.Constant((GroupCommand)new GroupCommand.CrashAndOpenAlone())),
            (1, Gen.Constant((GroupCommand)new GroupCommand.Reopen())));
    }

    private static void Check(ulong seed, int tests)
    {
        var scenarios = from options in Gen.Choose(0, Options.Length - 1)
                        from count in Gen.Choose(1, 80)
                        from commands in Gen.ArrayOf(Command(), count)
                        select (options, commands);
        var property = Prop.ForAll(scenarios.ToArbitrary(), scenario => Run(Options[scenario.options], scenario.commands));
        var config = ModelCheck.Config(seed, tests);
        if (System.Environment.GetEnvironmentVariable("STORAGE_MODEL_REPLAY") is { } replay)
        {
            var parts = replay.Split(',').Select(p => ulong.Parse(p, CultureInfo.InvariantCulture)).ToArray();
            config = config.WithMaxTest(1).WithReplay(FSharpOption<Replay>.Some(new Replay(new Rnd(parts[0], parts[1]), FSharpOption<int>.Some((int)parts[2]))));
        }
        ModelCheck.Run(config, property, seed, "group run");
    }

    private static void Run(StorageOptions options, GroupCommand[] commands)
    {
        using var temp = new TempDirectory("group-model");
        var directories = Enumerable.Range(0, Members).Select(m => temp.Combine(m == 0 ? "root" : $"branch-{m}")).ToArray();
        // Per member: the committed state, and the states a crash may leave (after each commit since the last durable one).
        var committed = Enumerable.Range(0, Members).Select(_ => OrdinalBytes.NewModel()).ToArray();
        var possible = Enumerable.Range(0, Members).Select(_ => new List<SortedDictionary<byte[], byte[]>> { OrdinalBytes.NewModel() }).ToArray();
        var (group, envs) = Open(directories, options);
        try
        {
            for (var step = 0; step < commands.Length; step++)
            {
                var context = $"step {step} ({commands[step]})";
                switch (commands[step])
                {
                    case GroupCommand.Transaction t:
                        // A transaction that changes nothing (deletes of absent keys only) commits nothing: no entry, no write.
                        var changed = false;
                        using (var tx = envs[t.Member].BeginWrite())
                        {
                            // Creating the tree changes pages too.
                            changed = !tx.TryOpenTree("t", out _);
                            var tree = tx.OpenOrCreateTree("t");
                            foreach (var (key, size, valueSeed) in t.Writes)
                            {
                                var k = Key(key);
                                if (size < 0)
                                {
                                    tree.Delete(k);
                                    changed |= committed[t.Member].Remove(k);
                                }
                                else
                                {
                                    var value = TestData.Value(valueSeed, size);
                                    tree.Put(k, value);
                                    committed[t.Member][k] = value;
                                    changed = true;
                                }
                            }
                            tx.Commit(t.Lazy ? CommitDurability.Lazy : CommitDurability.Durable);
                        }
                        var state = new SortedDictionary<byte[], byte[]>(committed[t.Member], OrdinalBytes.Instance);
                        if (!changed)
                        {
                            AssertState(envs[t.Member], committed[t.Member], context);
                            break;
                        }
                        if (t.Lazy)
                        {
                            possible[t.Member].Add(state);
                        }
                        else
                        {
                            // A durable commit of any member writes every member's entries waiting before it.
                            foreach (var list in possible) list.RemoveRange(0, list.Count - 1);
                            possible[t.Member].Clear();
                            possible[t.Member].Add(state);
                        }
                        AssertState(envs[t.Member], committed[t.Member], context);
                        break;
                    case GroupCommand.Checkpoint c:
                        // The member's entries waiting go out, and with them every member's waiting then; with none of its own waiting, nothing is written.
                        if (possible[c.Member].Count > 1)
                        {
                            foreach (var list in possible) list.RemoveRange(0, list.Count - 1);
                        }
                        envs[c.Member].Checkpoint();
                        break;
                    case GroupCommand.CrashGroup:
                    case GroupCommand.CrashAndOpenAlone:
                        group.SimulateCrash();
                        if (System.Environment.GetEnvironmentVariable("STORAGE_MODEL_KEEP") is { } keep)
                        {
                            TempDirectory.DeleteDirectory(keep + "-" + step);
                            TempDirectory.CopyDirectory(temp.Path, keep + "-" + step);
                        }
                        if (commands[step] is GroupCommand.CrashAndOpenAlone)
                        {
                            for (var m = 0; m < Members; m++)
                            {
                                using var alone = StorageEnvironment.Open(directories[m], options);
                                committed[m] = MatchOne(alone, possible[m], $"{context}, member {m} alone");
                            }
                        }
                        (group, envs) = Open(directories, options);
                        for (var m = 0; m < Members; m++)
                        {
                            committed[m] = MatchOne(envs[m], commands[step] is GroupCommand.CrashAndOpenAlone ? [committed[m]] : possible[m], $"{context}, member {m}");
                            possible[m] = [new SortedDictionary<byte[], byte[]>(committed[m], OrdinalBytes.Instance)];
                        }
                        break;
                    case GroupCommand.Reopen:
                        group.Dispose();
                        (group, envs) = Open(directories, options);
                        for (var m = 0; m < Members; m++)
                        {
                            AssertState(envs[m], committed[m], $"{context}, member {m}");
                            possible[m] = [new SortedDictionary<byte[], byte[]>(committed[m], OrdinalBytes.Instance)];
                        }
                        break;
                }
            }
        }
        finally
        {
            group.Dispose();
        }
    }

    private static (EnvironmentGroup Group, StorageEnvironment[] Members) Open(string[] directories, StorageOptions options)
    {
        var group = EnvironmentGroup.Open(directories[0], options);
        var members = new StorageEnvironment[directories.Length];
        members[0] = group.Root;
        for (var m = 1; m < directories.Length; m++) members[m] = group.OpenBranch(directories[m], options);
        return (group, members);
    }

    private static byte[] Key(int key) => TestData.Key($"k{key:D2}");

    private static SortedDictionary<byte[], byte[]> Read(StorageEnvironment env)
    {
        var actual = OrdinalBytes.NewModel();
        using var tx = env.BeginRead();
        if (!tx.TryOpenTree("t", out var tree)) return actual;
        var cursor = tree.CreateCursor();
        for (var ok = cursor.SeekFirst(); ok; ok = cursor.MoveNext()) actual[cursor.Key.ToArray()] = cursor.Value.ToArray();
        return actual;
    }

    private static void AssertState(StorageEnvironment env, SortedDictionary<byte[], byte[]> expected, string context)
    {
        var actual = Read(env);
        Assert.True(Same(expected, actual), $"{context}: {actual.Count} entries, expected {expected.Count}");
    }

    /// <summary>The member's state must be one of <paramref name="candidates"/>; returns it.</summary>
    private static SortedDictionary<byte[], byte[]> MatchOne(StorageEnvironment env, List<SortedDictionary<byte[], byte[]>> candidates, string context)
    {
        var actual = Read(env);
        Assert.True(candidates.Any(c => Same(c, actual)), $"{context}: the state after the crash ({actual.Count} entries) is none of the {candidates.Count} it may be");
        return actual;
    }

    private static bool Same(SortedDictionary<byte[], byte[]> a, SortedDictionary<byte[], byte[]> b) =>
        a.Count == b.Count && a.Zip(b).All(p => p.First.Key.AsSpan().SequenceEqual(p.Second.Key) && p.First.Value.AsSpan().SequenceEqual(p.Second.Value));
}
