using Storage.Paging;

namespace Storage.Benchmarks.Engines;

/// <summary>This project's engine, with default options.</summary>
internal sealed class StorageEngine : IEngine
{
    public string Name => "storage";

    public string DataFileName => DataFile.FileName;

    public string? UnavailableReason => null;

    public IEngineInstance Open(string directory) => new StorageEngineInstance(directory);
}
