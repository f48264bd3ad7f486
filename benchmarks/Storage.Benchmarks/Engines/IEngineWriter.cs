using Storage.Benchmarks.Generators;

namespace Storage.Benchmarks.Engines;

/// <summary>Durable writes from one thread while other threads write through writers of their own.</summary>
internal interface IEngineWriter : IDisposable
{
    /// <summary>Writes the batch in one transaction and returns once the commit is durable.</summary>
    void Commit(KeyValueBatch batch);
}

/// <summary>A writer whose engine has an asynchronous commit (W6-async): no thread waits while the disk works.</summary>
internal interface IAsyncEngineWriter : IEngineWriter
{
    /// <summary>Writes the batch in one transaction; completes once the commit is durable.</summary>
    ValueTask CommitAsync(KeyValueBatch batch);
}

/// <summary>An engine that merges many callers' writes into one transaction (W6-merged).</summary>
internal interface IMergingEngineInstance : IEngineInstance
{
    /// <summary>Submits the batch's puts as one operation to be merged with other callers'; returns once the merged commit is durable.</summary>
    void CommitMerged(KeyValueBatch batch);
}

/// <summary>
/// An engine whose commit hands the transaction to the journal and lets the same thread begin the next one before the
/// durable write returns (W1-pipelined).
/// </summary>
internal interface IPipelinedEngineInstance : IEngineInstance
{
    /// <summary>
    /// Writes the batch in one transaction and returns once it is handed to the journal (the batch may then be reused);
    /// the task completes once the commit is durable, and fails when it cannot be.
    /// </summary>
    ValueTask CommitPipelined(KeyValueBatch batch);
}
