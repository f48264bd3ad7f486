using System.Text;

namespace Storage.CrashHost;

/// <summary>What the archive kill test's child commits, shared with the test that checks it.</summary>
public static class ArchiveWorkload
{
    public static StorageOptions Options(string archive) => new()
    {
        MinJournalFileSizeBytes = 64 << 10,
        MaxJournalFileSizeBytes = 128 << 10,
        FlushInterval = TimeSpan.FromMilliseconds(2),
        SyncInterval = TimeSpan.FromMilliseconds(5),
        RetainedJournalBytes = 256L << 20,
        ArchiveDirectory = archive,
        ArchiveInterval = TimeSpan.FromMilliseconds(5),
    };

    public static byte[] Key(long i) => Encoding.ASCII.GetBytes($"k{i % 300:D3}");

    public static byte[] Value(long i) => Encoding.ASCII.GetBytes($"v{i}".PadRight(30 + (int)(i % 200), '.'));

    /// <summary>Transaction <paramref name="i"/> of the workload: one key and "last".</summary>
    public static void Commit(StorageEnvironment env, long i)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("t");
        tree.Put(Key(i), Value(i));
        tree.Put("last"u8, Keys.Int64(i));
        tx.Commit();
    }
}
