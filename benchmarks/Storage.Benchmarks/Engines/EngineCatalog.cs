namespace Storage.Benchmarks.Engines;

/// <summary>The engines the runner knows, in column order.</summary>
internal static class EngineCatalog
{
    public static IReadOnlyList<IEngine> All { get; } =
    [
        new StorageEngine(),
        new LmdbEngine(),
        new SqliteEngine(),
        new RocksDbEngine(),
    ];

    public static IEngine? Find(string name) =>
        All.FirstOrDefault(engine => string.Equals(engine.Name, name, StringComparison.OrdinalIgnoreCase));
}
