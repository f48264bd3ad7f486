namespace Storage.Benchmarks.Engines;

/// <summary>SQLite through Microsoft.Data.Sqlite: WAL, synchronous=FULL, one WITHOUT ROWID table.</summary>
internal sealed class SqliteEngine : IEngine
{
    public string Name => "sqlite";

    public string DataFileName => SqliteEngineInstance.FileName;

    public string? UnavailableReason => null;

    public IEngineInstance Open(string directory) => new SqliteEngineInstance(directory);
}
