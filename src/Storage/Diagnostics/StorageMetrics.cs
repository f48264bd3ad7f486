using System.Diagnostics.Metrics;

namespace Storage.Diagnostics;

/// <summary>
/// An environment's counters as <see cref="System.Diagnostics.Metrics"/> instruments on the meter
/// <see cref="MeterName"/>, tagged with the environment's directory. They are observable: a listener's
/// collection reads the same counters <see cref="StorageEnvironment.GetStats()"/> does, so the commit path
/// pays nothing for them. The reader figures (oldest reader, pinned bytes) come from one measurement shared by
/// the instruments of a collection, since pinned bytes take a walk of the page table.
/// </summary>
internal sealed class StorageMetrics : IDisposable
{
    public const string MeterName = "Storage";

    private readonly Meter _meter;

    public StorageMetrics(StorageEnvironment environment)
    {
        var tags = new KeyValuePair<string, object?>[] { new("storage.environment", environment.DirectoryPath) };
        _meter = new Meter(MeterName, version: null, tags);
        Func<EnvironmentStats> stats = () => environment.GetStats(environment.ReaderMonitor.Recent());
        _meter.CreateObservableCounter("storage.commits", () => stats().Commits, "{transaction}", "Write transactions committed");
        _meter.CreateObservableCounter("storage.journal.writes", () => stats().JournalWrites, "{write}", "Durable journal writes issued");
        _meter.CreateObservableCounter("storage.journal.bytes", () => stats().JournalBytes, "By", "Journal bytes written");
        _meter.CreateObservableCounter("storage.pages.modified", () => stats().PagesModified, "{page}", "Pages modified by committed transactions");
        _meter.CreateObservableCounter("storage.flushes", () => stats().Flushes, "{flush}", "Flushes to the data file");
        _meter.CreateObservableCounter("storage.flush.pages", () => stats().FlushedPages, "{page}", "Pages written by flushes");
        _meter.CreateObservableCounter("storage.flush.runs", () => stats().FlushRuns, "{write}", "Write calls of flushes, after merging adjacent pages");
        _meter.CreateObservableCounter("storage.flush.bytes", () => stats().FlushedBytes, "By", "Bytes written by flushes");
        _meter.CreateObservableCounter("storage.syncs", () => stats().Syncs, "{sync}", "Data file syncs, each followed by a header write");
        _meter.CreateObservableGauge("storage.scratch.bytes", () => stats().ScratchBytes, "By", "Scratch memory holding page versions not yet in the data file");
        _meter.CreateObservableGauge("storage.datafile.bytes", () => stats().DataFileBytes, "By", "Size of the data file");
        _meter.CreateObservableGauge("storage.transactions.active", () => stats().ActiveTransactions, "{transaction}", "Open read and write transactions");
        _meter.CreateObservableGauge("storage.readers.oldest.age", () => stats().OldestReaderAge.TotalSeconds, "s", "How long the oldest open read transaction has been open");
        _meter.CreateObservableGauge("storage.readers.pinned.bytes", () => stats().PinnedBytes, "By", "Scratch bytes open snapshots keep from being freed or flushed");
        _meter.CreateObservableCounter("storage.readers.warnings", () => stats().ReaderWarnings, "{warning}", "Times the oldest reader passed the warning threshold or the limit");
        _meter.CreateObservableCounter("storage.readers.ended", () => stats().ReadersEnded, "{transaction}", "Read transactions ended by the reader limit policy");
        _meter.CreateObservableCounter("storage.commits.refused", () => stats().CommitsRefused, "{transaction}", "Commits refused by the reader limit policy");
        _meter.CreateObservableGauge("storage.scratch.spilled.bytes", () => stats().ScratchSpilledBytes, "By", "Scratch held in the scratch file rather than in memory");
        _meter.CreateObservableCounter("storage.transactions.leaked", () => stats().LeakedTransactions, "{transaction}", "Transactions collected without having been disposed");
    }

    public void Dispose() => _meter.Dispose();
}
