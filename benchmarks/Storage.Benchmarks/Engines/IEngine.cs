namespace Storage.Benchmarks.Engines;

/// <summary>One engine under comparison: says whether it can run here and opens instances of it.</summary>
internal interface IEngine
{
    /// <summary>The column name, as given to <c>--engines</c>.</summary>
    string Name { get; }

    /// <summary>
    /// What the report calls the data file's size, in the instance's <paramref name="directory"/>: the engine's one
    /// data file, or the files that hold its tables where it has several (RocksDB's SSTs); null when there are none.
    /// </summary>
    long? DataFileBytes(string directory);

    /// <summary>Null when the engine can run on this machine; otherwise the cell text saying why not.</summary>
    string? UnavailableReason { get; }

    /// <summary>Opens the engine in <paramref name="directory"/>, creating the one tree/table the workloads use when missing.</summary>
    IEngineInstance Open(string directory, CommitMode mode = CommitMode.Durable);
}
