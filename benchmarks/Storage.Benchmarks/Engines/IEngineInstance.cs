using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Engines;

/// <summary>An open engine. Dispose it to flush and sync everything and close it.</summary>
internal interface IEngineInstance : IDisposable
{
    /// <summary>Writes the batch in one transaction and returns once the commit is durable (acknowledged, when opened with <see cref="CommitMode.Lazy"/>).</summary>
    void Commit(KeyValueBatch batch);

    /// <summary>Deletes the batch's keys (its values are ignored) in one transaction; returns once the commit is durable.</summary>
    void CommitDeletes(KeyValueBatch batch);

    /// <summary>Gives free space back while open, where the engine can (W10); null when done, else the cell text saying why not.</summary>
    string? Compact();

    /// <summary>Begins a snapshot reader; use it on the calling thread only and dispose it there.</summary>
    IEngineReader BeginRead();

    /// <summary>A writer for one thread of a concurrent workload (W6); dispose it before the instance.</summary>
    IEngineWriter CreateWriter();

    /// <summary>Engine-specific figures gathered since open (for example per-commit page counts); read after <see cref="IDisposable.Dispose"/>.</summary>
    IReadOnlyList<Figure> Counters();
}
