using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Engines;

/// <summary>Durable writes from one thread while other threads write through writers of their own.</summary>
internal interface IEngineWriter : IDisposable
{
    /// <summary>Writes the batch in one transaction and returns once the commit is durable.</summary>
    void WriteDurable(KeyValueBatch batch);
}
