using Storage.Benchmarks.Measurement;
using Storage.Paging;

namespace Storage.Benchmarks.Engines;

/// <summary>This project's engine, with default options (or options changed for one workload, W8).</summary>
internal sealed class StorageEngine(Func<StorageOptions, StorageOptions>? configure = null) : IEngine
{
    public string Name => "storage";

    public long? DataFileBytes(string directory) => FileSizes.Of(Path.Combine(directory, DataFile.FileName));

    public string? UnavailableReason => null;

    public IEngineInstance Open(string directory, CommitMode mode = CommitMode.Durable) => new StorageEngineInstance(directory, mode, configure);

    /// <summary>An instance over an environment the caller opens with this engine's options (a member of an environment group).</summary>
    public StorageEngineInstance Open(Func<StorageOptions, StorageEnvironment> open) => new(open, CommitMode.Durable, configure);
}
