using System.Buffers.Binary;
using System.Text;

namespace Storage.CrashHost;

/// <summary>
/// The workload the crash host commits and the crash test verifies; compiled into both, so that the two
/// always agree. Transaction <c>i</c> (1, 2, ...) writes <see cref="KeyCount"/> keys <c>t{i:D8}-{j:D4}</c>,
/// deletes every key of transaction <c>i - <see cref="Window"/></c>, and sets <c>last</c> to <c>i</c>: after
/// transaction L the tree holds exactly the keys of transactions L-Window+1 .. L, plus <c>last</c>.
/// </summary>
internal static class KillWorkload
{
    public const string TreeName = "kill";

    /// <summary>How many transactions' keys are alive at once.</summary>
    public const int Window = 40;

    public static readonly byte[] LastKey = "last"u8.ToArray();

    public static int KeyCount(long transaction) => 1 + (int)((transaction * 7919) % 23);

    public static byte[] Key(long transaction, int index) => Encoding.ASCII.GetBytes($"t{transaction:D8}-{index:D4}");

    /// <summary>Mostly small values, now and then one that needs an overflow run, now and then an empty one.</summary>
    public static int ValueLength(long transaction, int index)
    {
        var h = Mix((ulong)transaction * 31 + (ulong)index);
        return (h % 17) switch
        {
            0 => 2049 + (int)((h >> 20) % 9000),
            1 => 0,
            _ => 8 + (int)((h >> 8) % 200),
        };
    }

    public static byte[] Value(long transaction, int index)
    {
        var value = new byte[ValueLength(transaction, index)];
        var state = Mix(((ulong)transaction << 20) ^ (ulong)index ^ 0x9E3779B97F4A7C15UL);
        for (var i = 0; i < value.Length; i++)
        {
            state = Mix(state + (ulong)i);
            value[i] = (byte)state;
        }
        return value;
    }

    public static byte[] LastValue(long transaction)
    {
        var bytes = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, transaction);
        return bytes;
    }

    public static long ParseLast(ReadOnlySpan<byte> value) =>
        value.Length == 8 ? BinaryPrimitives.ReadInt64LittleEndian(value) : throw new InvalidDataException($"'last' holds {value.Length} bytes, expected 8.");

    /// <summary>Members of the environment group the host's group mode commits into: the root and three branches.</summary>
    public const int GroupMembers = 4;

    /// <summary>Concurrent committers in each member of the group mode (even: blocking, odd: asynchronous).</summary>
    public const int GroupWorkers = 2;

    /// <summary>The directory of a group member: the root (0) or a branch.</summary>
    public static string GroupMember(string directory, int member) =>
        System.IO.Path.Combine(directory, member == 0 ? "root" : $"branch-{member}");

    /// <summary>Whether the host compacts in a loop beside its committers.</summary>
    public static bool Compacts(int seed) => seed % 4 < 2;

    /// <summary>On a third of the seeds, the sequential writer pipelines its commits (CommitAsync, up to <see cref="PipelineDepth"/> in flight).</summary>
    public static bool Pipelines(int seed) => seed % 3 == 1;

    /// <summary>The pipelined writer's commits in flight at most.</summary>
    public const int PipelineDepth = 8;

    /// <summary>The options both sides open the environment with: small journal files, frequent flushes and syncs, so kills land everywhere.</summary>
    public static StorageOptions Options(int seed) => new()
    {
        MinJournalFileSizeBytes = 64 << 10,
        MaxJournalFileSizeBytes = 256 << 10,
        FlushInterval = TimeSpan.FromMilliseconds(1 + seed % 20),
        SyncInterval = TimeSpan.FromMilliseconds(5 + seed % 50),
        ScratchBudgetBytes = 1 << 20,
        CompressionThresholdBytes = seed % 2 == 0 ? 4096 : 32 << 10,
        FlushGapFillBytes = (seed / 4) % 2 == 0 ? 16 << 10 : 1 << 20,
    };

    /// <summary>Writes transaction <paramref name="transaction"/> into an open write transaction.</summary>
    public static void Write(WriteTransaction tx, long transaction)
    {
        var tree = tx.OpenOrCreateTree(TreeName);
        var count = KeyCount(transaction);
        for (var j = 0; j < count; j++) tree.Put(Key(transaction, j), Value(transaction, j));
        var expired = transaction - Window;
        if (expired >= 1)
        {
            for (var j = 0; j < KeyCount(expired); j++)
            {
                if (!tree.Delete(Key(expired, j))) throw new InvalidOperationException($"Key {j} of transaction {expired} was missing when transaction {transaction} went to delete it.");
            }
        }
        tree.Put(LastKey, LastValue(transaction));
    }

    /// <summary>The tree the concurrent committers write, each its own keys, beside the sequential workload's.</summary>
    public const string ConcurrentTreeName = "kill-concurrent";

    /// <summary>Concurrent committers: even ones commit with <see cref="WriteTransaction.Commit()"/> on their own thread, odd ones with <see cref="WriteTransaction.CommitAsync(CancellationToken)"/>.</summary>
    public const int Workers = 4;

    /// <summary>How many of a concurrent committer's transactions' keys are alive at once.</summary>
    public const int ConcurrentWindow = 8;

    public static byte[] ConcurrentKey(int worker, long transaction) => Encoding.ASCII.GetBytes($"w{worker:D2}-{transaction:D8}");

    public static byte[] ConcurrentLastKey(int worker) => Encoding.ASCII.GetBytes($"last-w{worker:D2}");

    public static byte[] ConcurrentValue(int worker, long transaction) => Value(transaction, 1000 + worker);

    /// <summary>
    /// Concurrent committer <paramref name="worker"/>'s transaction <paramref name="transaction"/> (1, 2, ...): its key, the
    /// deletion of its key <see cref="ConcurrentWindow"/> transactions back, and its <c>last-w</c> key.
    /// </summary>
    public static void WriteConcurrent(WriteTransaction tx, int worker, long transaction)
    {
        var tree = tx.OpenOrCreateTree(ConcurrentTreeName);
        tree.Put(ConcurrentKey(worker, transaction), ConcurrentValue(worker, transaction));
        var expired = transaction - ConcurrentWindow;
        if (expired >= 1 && !tree.Delete(ConcurrentKey(worker, expired)))
        {
            throw new InvalidOperationException($"Worker {worker}'s key of transaction {expired} was missing when transaction {transaction} went to delete it.");
        }
        tree.Put(ConcurrentLastKey(worker), LastValue(transaction));
    }

    private static ulong Mix(ulong x)
    {
        x ^= x >> 33;
        x *= 0xFF51AFD7ED558CCDUL;
        x ^= x >> 33;
        x *= 0xC4CEB9FE1A85EC53UL;
        x ^= x >> 33;
        return x;
    }

    /// <summary>A branch replacement's versions: tree "version", <see cref="VersionTransactions"/> durable commits of "old" or "new".</summary>
    public const int VersionTransactions = 25;

    public static void WriteVersion(StorageEnvironment env, string version)
    {
        for (var t = 1; t <= VersionTransactions; t++)
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenOrCreateTree("version");
            tree.Put(Encoding.ASCII.GetBytes($"{version}-{t:D4}"), Value(t, version.Length));
            tree.Put("last"u8, Encoding.ASCII.GetBytes($"{version}-{t}"));
            tx.Commit();
        }
    }

    /// <summary>"old" or "new" when <paramref name="env"/> holds exactly that version, whole; otherwise what is wrong.</summary>
    public static string VersionOf(StorageEnvironment env)
    {
        using var tx = env.BeginRead();
        if (!tx.TryOpenTree("version", out var tree)) return "no version tree";
        if (!tree.TryGet("last"u8, out var last)) return "no last key";
        var text = Encoding.ASCII.GetString(last);
        var version = text.Split('-')[0];
        if (text != $"{version}-{VersionTransactions}") return $"last is '{text}'";
        if (tree.Count != VersionTransactions + 1) return $"{tree.Count} entries";
        for (var t = 1; t <= VersionTransactions; t++)
        {
            if (!tree.TryGet(Encoding.ASCII.GetBytes($"{version}-{t:D4}"), out var value) || !value.SequenceEqual(Value(t, version.Length))) return $"{version}-{t} is wrong";
        }
        return version;
    }
}
