using Storage.Benchmarks.Measurement;

namespace Storage.Benchmarks.Engines;

/// <summary>SQLite through Microsoft.Data.Sqlite: WAL, synchronous=FULL, one WITHOUT ROWID table.</summary>
internal sealed class SqliteEngine : IEngine
{
    public string Name => "sqlite";

    public long? DataFileBytes(string directory) => FileSizes.Of(Path.Combine(directory, SqliteEngineInstance.FileName));

    public string? UnavailableReason => null;

    public IEngineInstance Open(string directory, CommitMode mode = CommitMode.Durable) => new SqliteEngineInstance(directory, mode);
}
