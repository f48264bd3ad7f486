using System.Text;
using FsCheck.Fluent;
using FsCheck;
using Storage.Tests.Support;
using TestData = Storage.Tests.Support.TestData;

namespace Storage.Tests.ModelTests;

/// <summary>One step of a model-based run.</summary>
public abstract record Command
{
    public sealed record Put(int Key, int ValueSize, int ValueSeed) : Command
    {
        public override string ToString() => $"Put({ModelKeys.Describe(Key)}, {ValueSize}b#{ValueSeed})";
    }

    public sealed record Delete(int Key) : Command
    {
        public override string ToString() => $"Delete({ModelKeys.Describe(Key)})";
    }

    public sealed record Get(int Key) : Command
    {
        public override string ToString() => $"Get({ModelKeys.Describe(Key)})";
    }

    /// <summary>A range scan: bounds are key indexes or -1 for open; or a prefix scan when Prefix >= 0.</summary>
    public sealed record Scan(int From, int To, int Prefix, bool Reverse) : Command
    {
        public override string ToString() => Prefix >= 0
            ? $"Prefix({ModelKeys.Describe(Prefix)}, reverse={Reverse})"
            : $"Range({(From < 0 ? "open" : ModelKeys.Describe(From))}, {(To < 0 ? "open" : ModelKeys.Describe(To))}, reverse={Reverse})";
    }

    /// <summary>Commits the write transaction; a lazy commit is visible at once and durable with the next write of the journal.</summary>
    public sealed record Commit(bool Lazy = false) : Command
    {
        public override string ToString() => Lazy ? "Commit(lazy)" : "Commit";
    }

    public sealed record Rollback : Command;

    public sealed record Reopen : Command;

    public sealed record CrashAndReopen : Command;

    public sealed record Checkpoint : Command;

    /// <summary>Commits what is pending, then compacts the environment (snapshots stay open across it).</summary>
    public sealed record Compact : Command;

    /// <summary>Begins a read transaction and remembers the committed model it must keep seeing (up to a few at once).</summary>
    public sealed record OpenSnapshot : Command;

    /// <summary>Compares one of the open snapshots (chosen by <paramref name="Which"/> modulo their number) with its model.</summary>
    public sealed record CheckSnapshot(int Which) : Command;

    /// <summary>Ends one of the open snapshots.</summary>
    public sealed record CloseSnapshot(int Which) : Command;
}

/// <summary>A run: options and the commands.</summary>
public sealed record Scenario(int OptionsIndex, Command[] Commands)
{
    public override string ToString() => $"Scenario(options {OptionsIndex}: {ModelOptions.Describe(OptionsIndex)}; {Commands.Length} commands:{Environment.NewLine}  {string.Join(Environment.NewLine + "  ", Commands.Select(c => c.ToString()))})";
}

/// <summary>
/// The key alphabet: short keys over a small alphabet (so puts collide and deletes hit), a few keys with 0x00
/// and 0xFF bytes (ordinal order), and long keys (up to 1,024 bytes) that force splits early.
/// </summary>
public static class ModelKeys
{
    private static readonly byte[][] All = Build();

    public static int Count => All.Length;

    public static byte[] Get(int index) => All[index];

    public static string Describe(int index) => TestData.Show(All[index]);

    private static byte[][] Build()
    {
        var keys = new List<byte[]>();
        const string alphabet = "abc";
        foreach (var a in alphabet)
        {
            keys.Add([(byte)a]);
            foreach (var b in alphabet)
            {
                keys.Add([(byte)a, (byte)b]);
                foreach (var c in alphabet) keys.Add([(byte)a, (byte)b, (byte)c]);
            }
        }
        keys.Add([0x00]);
        keys.Add([0x00, 0x00]);
        keys.Add([0xFF]);
        keys.Add([0xFF, 0xFF, 0x00]);
        keys.Add([(byte)'a', 0x00]);
        keys.Add([(byte)'a', 0xFF]);
        foreach (var length in new[] { 200, 600, 1000, 1024 })
        {
            foreach (var start in "abc")
            {
                var key = new byte[length];
                for (var i = 0; i < length; i++) key[i] = (byte)(start + (i % 7 == 6 ? 1 : 0));
                keys.Add(key);
            }
        }
        return keys.Distinct(OrdinalBytes.Instance).ToArray();
    }
}

/// <summary>Per-run options: how eagerly the background flushes and syncs (so crashes land at different stages).</summary>
public static class ModelOptions
{
    private static readonly StorageOptions[] All =
    [
        TestOptions.Small with { FlushInterval = TimeSpan.FromMilliseconds(600_000), SyncInterval = TimeSpan.FromMilliseconds(600_000) },
        TestOptions.Small with { FlushInterval = TimeSpan.FromMilliseconds(2), SyncInterval = TimeSpan.FromMilliseconds(5), ScratchBudgetBytes = 1 << 20, FlushGapFillBytes = 1 << 20 },
        TestOptions.Small with { FlushInterval = TimeSpan.FromMilliseconds(10), SyncInterval = TimeSpan.FromMilliseconds(600_000), ScratchBudgetBytes = 1 << 20 },
        TestOptions.Small with { FlushInterval = TimeSpan.FromMilliseconds(1), SyncInterval = TimeSpan.FromMilliseconds(1), ScratchBudgetBytes = 1 << 20, CompressionThresholdBytes = 4096 },
        // Flushed only when scratch passes 1 MiB; while snapshots pin anything, new page versions go to the scratch file.
        (TestOptions.Small with { FlushInterval = TimeSpan.FromMilliseconds(600_000), SyncInterval = TimeSpan.FromMilliseconds(600_000), ScratchBudgetBytes = 1 << 20 }).WithSpillWhenPinned(),
    ];

    public static int Count => All.Length;

    public static StorageOptions Get(int index) => All[index];

    public static string Describe(int index)
    {
        var o = All[index];
        return $"flush {o.FlushInterval.TotalMilliseconds} ms, sync {o.SyncInterval.TotalMilliseconds} ms, scratch budget {o.ScratchBudgetBytes >> 20} MiB, gaps filled up to {o.FlushGapFillBytes >> 10} KiB, compression from {o.CompressionThresholdBytes} B{(o.Hooks.SpillWhenPinned ? ", spills whenever snapshots pin scratch" : "")}";
    }
}

/// <summary>Generators and shrinkers for scenarios.</summary>
public static class ModelGenerators
{
    public static Gen<Command> Command()
    {
        var key = Gen.Choose(0, ModelKeys.Count - 1);
        var boundOrOpen = Gen.Frequency((1, Gen.Constant(-1)), (4, key));
        var size = Gen.Frequency(
            (6, Gen.Constant(0)),
            (40, Gen.Choose(1, 64)),
            (10, Gen.Choose(65, 2047)),
            (4, Gen.Elements(2047, 2048, 2049)),
            (14, Gen.Choose(2050, 8160)),
            (6, Gen.Choose(8161, 40_000)),
            (1, Gen.Choose(40_001, 300_000)));
        var put = from k in key
                  from s in size
                  from seed in Gen.Choose(0, 1_000_000)
                  select (Command)new Command.Put(k, s, seed);
        var scan = from lo in boundOrOpen
                   from hi in boundOrOpen
                   from isPrefix in Gen.Frequency((3, Gen.Constant(false)), (1, Gen.Constant(true)))
                   from prefix in key
                   from reverse in Gen.Elements(false, true)
                   select (Command)new Command.Scan(isPrefix ? -1 : lo, isPrefix ? -1 : hi, isPrefix ? prefix : -1, reverse);
        return Gen.Frequency(
            (40, put),
            (16, key.Select(k => (Command)new Command.Delete(k))),
            (10, key.Select(k => (Command)new Command.Get(k))),
            (8, scan),
            (9, Gen.Constant((Command)new Command.Commit())),
            (4, Gen.Constant((Command)new Command.Commit(Lazy: true))),
            (3, Gen.Constant((Command)new Command.Rollback())),
            (2, Gen.Constant((Command)new Command.Reopen())),
            (3, Gen.Constant((Command)new Command.CrashAndReopen())),
            (2, Gen.Constant((Command)new Command.Checkpoint())),
            (2, Gen.Constant((Command)new Command.Compact())),
            (3, Gen.Constant((Command)new Command.OpenSnapshot())),
            (4, Gen.Choose(0, 7).Select(which => (Command)new Command.CheckSnapshot(which))),
            (2, Gen.Choose(0, 7).Select(which => (Command)new Command.CloseSnapshot(which))));
    }

    public static Arbitrary<Scenario> Scenarios(int maxCommands)
    {
        var gen = from options in Gen.Choose(0, ModelOptions.Count - 1)
                  from length in Gen.Choose(1, maxCommands)
                  from commands in Command().ArrayOf(length)
                  select new Scenario(options, commands);
        return Arb.From(gen, Shrink);
    }

    /// <summary>Shorter runs: halves, then chunks, then (for short runs) single commands; smaller values.</summary>
    public static IEnumerable<Scenario> Shrink(Scenario scenario)
    {
        var commands = scenario.Commands;
        var n = commands.Length;
        if (n > 1)
        {
            yield return scenario with { Commands = commands[..(n / 2)] };
            yield return scenario with { Commands = commands[(n / 2)..] };
        }
        for (var chunk = Math.Max(1, n / 8); chunk >= 1 && n > 1; chunk = chunk == 1 ? 0 : Math.Max(1, chunk / 4))
        {
            if (chunk == 1 && n > 60) break;
            for (var start = 0; start + chunk <= n; start += chunk)
            {
                yield return scenario with { Commands = [.. commands[..start], .. commands[(start + chunk)..]] };
            }
        }
        if (scenario.OptionsIndex != 0) yield return scenario with { OptionsIndex = 0 };
        for (var i = 0; i < n; i++)
        {
            if (commands[i] is Command.Put { ValueSize: > 64 } put)
            {
                var smaller = put with { ValueSize = put.ValueSize > 8161 ? 8161 : put.ValueSize > 2049 ? 2049 : 10 };
                yield return scenario with { Commands = [.. commands[..i], smaller, .. commands[(i + 1)..]] };
            }
        }
    }

    public static byte[] Value(Command.Put put) => TestData.Value(put.ValueSeed, put.ValueSize);

    public static string KeyText(byte[] key) => Encoding.Latin1.GetString(key);
}
