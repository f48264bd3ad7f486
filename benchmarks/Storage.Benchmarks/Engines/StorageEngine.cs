using Storage.Benchmarks.Measurement;
using Storage.Paging;

namespace Storage.Benchmarks.Engines;

/// <summary>This project's engine, with default options.</summary>
internal sealed class StorageEngine : IEngine
{
    public string Name => "storage";

    public long? DataFileBytes(string directory) => FileSizes.Of(Path.Combine(directory, DataFile.FileName));

    public string? UnavailableReason => null;

    public IEngineInstance Open(string directory, CommitMode mode = CommitMode.Durable) => new StorageEngineInstance(directory, mode);
}
