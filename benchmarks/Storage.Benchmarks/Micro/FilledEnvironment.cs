using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Micro;

/// <summary>
/// A fresh environment under results/tmp filled as W1 fills it (random keys, 100-byte values), scaled down,
/// with an open read transaction on its tree: the set-up the read micro-benchmarks share.
/// </summary>
internal sealed class FilledEnvironment : IDisposable
{
    public const string TreeName = "kv";
    private const int PutsPerTransaction = 1_000;

    private readonly string _directory;
    private readonly StorageEnvironment _environment;
    private readonly ReadTransaction _read;

    public FilledEnvironment(string label, int filledKeys, StorageOptions? options = null)
    {
        _directory = Path.Combine(RepositoryPaths.Scratch(RepositoryPaths.FindRoot()), $"{label}-{Environment.ProcessId}");
        if (Directory.Exists(_directory)) Directory.Delete(_directory, recursive: true);
        _environment = StorageEnvironment.Open(_directory, options);
        var keys = new RandomKeySource();
        var values = new ValueSource();
        var batch = new KeyValueBatch(PutsPerTransaction);
        for (var written = 0; written < filledKeys; written += PutsPerTransaction)
        {
            batch.Fill(keys, values, PutsPerTransaction);
            using var tx = _environment.BeginWrite();
            var tree = tx.OpenOrCreateTree(TreeName);
            for (var i = 0; i < batch.Count; i++) tree.Put(batch.Key(i), batch.Value(i));
            tx.Commit();
        }
        _read = _environment.BeginRead();
        Tree = _read.OpenTree(TreeName);
    }

    /// <summary>The filled tree, in a read transaction open until dispose.</summary>
    public Tree Tree { get; }

    /// <summary>The environment, for benchmarks that begin transactions of their own.</summary>
    public StorageEnvironment Storage => _environment;

    public void Dispose()
    {
        _read.Dispose();
        _environment.Dispose();
        if (Directory.Exists(_directory)) Directory.Delete(_directory, recursive: true);
    }
}
