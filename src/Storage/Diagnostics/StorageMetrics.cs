using System.Diagnostics.Metrics;
using System.Diagnostics;

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
    private readonly Histogram<double> _commitDuration;
    private readonly Histogram<double> _journalWriteDuration;

    /// <summary>The meter of the environment in <paramref name="directoryPath"/>, with the instruments the commit path records into.</summary>
    public StorageMetrics(string directoryPath)
    {
        var tags = new KeyValuePair<string, object?>[] { new("storage.environment", directoryPath) };
        _meter = new Meter(MeterName, version: null, tags);
        _commitDuration = _meter.CreateHistogram<double>("storage.commit.duration", "s", "How long each commit that wrote a journal entry took, until durable");
        _journalWriteDuration = _meter.CreateHistogram<double>("storage.journal.write.duration", "s", "How long each durable journal write took");
    }

    /// <summary>The observable instruments, which read <paramref name="environment"/>'s stats at each collection: added once the environment is whole.</summary>
    public void Observe(StorageEnvironment environment)
    {
        Func<EnvironmentStats> stats = () => environment.GetStats(environment.ReaderMonitor.Recent());
        _meter.CreateObservableCounter("storage.commits", () => stats().Commits.Count, "{transaction}", "Write transactions committed");
        _meter.CreateObservableCounter("storage.journal.writes", () => stats().Journal.Writes, "{write}", "Durable journal writes issued");
        _meter.CreateObservableCounter("storage.journal.bytes", () => stats().Journal.Bytes, "By", "Journal bytes written");
        _meter.CreateObservableCounter("storage.pages.modified", () => stats().Commits.PagesModified, "{page}", "Pages modified by committed transactions");
        _meter.CreateObservableCounter("storage.flushes", () => stats().Flush.Count, "{flush}", "Flushes to the data file");
        _meter.CreateObservableCounter("storage.flush.pages", () => stats().Flush.Pages, "{page}", "Pages written by flushes");
        _meter.CreateObservableCounter("storage.flush.runs", () => stats().Flush.Runs, "{write}", "Write calls of flushes, after merging adjacent pages");
        _meter.CreateObservableCounter("storage.flush.bytes", () => stats().Flush.Bytes, "By", "Bytes written by flushes");
        _meter.CreateObservableCounter("storage.syncs", () => stats().Flush.Syncs, "{sync}", "Data file syncs, each followed by a header write");
        _meter.CreateObservableGauge("storage.scratch.bytes", () => stats().Memory.ScratchBytes, "By", "Scratch memory holding page versions not yet in the data file");
        _meter.CreateObservableGauge("storage.datafile.bytes", () => stats().Space.DataFileBytes, "By", "Size of the data file");
        _meter.CreateObservableGauge("storage.transactions.active", () => stats().Readers.ActiveTransactions, "{transaction}", "Open read and write transactions");
        _meter.CreateObservableGauge("storage.readers.oldest.age", () => stats().Readers.OldestAge.TotalSeconds, "s", "How long the oldest open read transaction has been open");
        _meter.CreateObservableGauge("storage.readers.pinned.bytes", () => stats().Memory.PinnedBytes, "By", "Scratch bytes open snapshots keep from being freed or flushed");
        _meter.CreateObservableCounter("storage.readers.warnings", () => stats().Readers.Warnings, "{warning}", "Times the oldest reader passed the warning threshold or the limit");
        _meter.CreateObservableCounter("storage.readers.ended", () => stats().Readers.Ended, "{transaction}", "Read transactions ended by the reader limit policy");
        _meter.CreateObservableCounter("storage.commits.refused", () => stats().Readers.CommitsRefused, "{transaction}", "Commits refused by the reader limit policy");
        _meter.CreateObservableGauge("storage.scratch.spilled.bytes", () => stats().Memory.ScratchSpilledBytes, "By", "Scratch held in the scratch file rather than in memory");
        _meter.CreateObservableCounter("storage.commit.phase.time", () => PhaseMeasurements(environment.Commits.Profile.Snapshot()), "s", "Time write transactions spent in each phase (see CommitActivity.Phases)");
        _meter.CreateObservableGauge("storage.archive.lag", () => stats().Archive.LagTransactions, "{transaction}", "Durable transactions not yet in the continuous archive");
        _meter.CreateObservableCounter("storage.transactions.leaked", () => stats().Readers.LeakedTransactions, "{transaction}", "Transactions collected without having been disposed");
    }

    /// <summary>Records one commit's duration in <see cref="Stopwatch"/> ticks (nothing happens unless a listener is on).</summary>
    public void RecordCommit(long commitTicks)
    {
        if (_commitDuration.Enabled) _commitDuration.Record(commitTicks / (double)Stopwatch.Frequency);
    }

    /// <summary>Records one durable journal write's duration in <see cref="Stopwatch"/> ticks.</summary>
    public void RecordJournalWrite(long journalWriteTicks)
    {
        if (_journalWriteDuration.Enabled) _journalWriteDuration.Record(journalWriteTicks / (double)Stopwatch.Frequency);
    }

    private static IEnumerable<Measurement<double>> PhaseMeasurements(CommitPhaseTimes phases)
    {
        yield return Phase("write_lock_wait", phases.WriteLockWait);
        yield return Phase("transaction_body", phases.TransactionBody);
        yield return Phase("page_copies", phases.PageCopies);
        yield return Phase("checksums", phases.Checksums);
        yield return Phase("diffs", phases.Diffs);
        yield return Phase("entry_finish", phases.EntryFinish);
        yield return Phase("journal_switches", phases.JournalSwitches);
        yield return Phase("durable_writes", phases.DurableWrites);
        yield return Phase("prune_lock_wait", phases.PruneLockWait);
        yield return Phase("publish", phases.Publish);
    }

    private static Measurement<double> Phase(string name, TimeSpan time) => new(time.TotalSeconds, new KeyValuePair<string, object?>("storage.phase", name));

    public void Dispose() => _meter.Dispose();
}
