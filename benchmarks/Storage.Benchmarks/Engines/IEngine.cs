namespace Storage.Benchmarks.Engines;

/// <summary>One engine under comparison: says whether it can run here and opens instances of it.</summary>
internal interface IEngine
{
    /// <summary>The column name, as given to <c>--engines</c>.</summary>
    string Name { get; }

    /// <summary>The file whose size is reported as "data file", inside the instance's directory.</summary>
    string DataFileName { get; }

    /// <summary>Null when the engine can run on this machine; otherwise the cell text saying why not.</summary>
    string? UnavailableReason { get; }

    /// <summary>Opens the engine in <paramref name="directory"/>, creating the one tree/table the workloads use when missing.</summary>
    IEngineInstance Open(string directory);
}
