namespace Storage.Tests.Support;

/// <summary>Small helpers for writing and reading one tree.</summary>
internal static class EnvHelpers
{
    public static void PutAndCommit(StorageEnvironment env, string tree, params (string Key, string Value)[] entries)
    {
        using var tx = env.BeginWrite();
        var t = tx.OpenOrCreateTree(tree);
        foreach (var (key, value) in entries) t.Put(TestData.Key(key), TestData.Value(value));
        tx.Commit();
    }

    public static string? GetString(StorageEnvironment env, string tree, string key)
    {
        using var tx = env.BeginRead();
        if (!tx.TryOpenTree(tree, out var t)) return null;
        var value = t.Get(TestData.Key(key));
        return value is null ? null : System.Text.Encoding.UTF8.GetString(value);
    }

    public static long CountOf(StorageEnvironment env, string tree)
    {
        using var tx = env.BeginRead();
        return tx.TryOpenTree(tree, out var t) ? t.Count : -1;
    }
}
