using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Engines;

/// <summary>An open <see cref="StorageEnvironment"/> with one tree, recording every commit's and flush's figures.</summary>
internal sealed class StorageEngineInstance : IMergingEngineInstance, IHotBackupInstance, IPipelinedEngineInstance
{
    public const string TreeName = "kv";

    private readonly StorageEnvironment _environment;
    private readonly RunningStatistics _pagesModified = new();
    private readonly RunningStatistics _leafPages = new();
    private readonly RunningStatistics _branchPages = new();
    private readonly RunningStatistics _overflowPages = new();
    private readonly RunningStatistics _otherPages = new();
    private readonly RunningStatistics _journalBytes = new();
    private readonly System.Collections.Concurrent.ConcurrentQueue<FlushStats> _flushLog = new();
    private long _compressedCommits;
    private long _allocatedBytes;
    private long _flushes;
    private long _flushedPages;
    private long _flushRuns;
    private long _flushedBytes;
    private EnvironmentStats? _statsBeforeDispose;
    private bool _disposed;

    private readonly CommitDurability _durability;
    private readonly Lock _recordLock = new();

    public StorageEngineInstance(string directory, CommitMode mode = CommitMode.Durable, Func<StorageOptions, StorageOptions>? configure = null)
        : this(options => StorageEnvironment.Open(directory, options), mode, configure)
    {
    }

    /// <summary>An instance over an environment the caller opens with the instance's options (a member of an environment group).</summary>
    public StorageEngineInstance(Func<StorageOptions, StorageEnvironment> open, CommitMode mode = CommitMode.Durable, Func<StorageOptions, StorageOptions>? configure = null)
    {
        _durability = mode == CommitMode.Lazy ? CommitDurability.Lazy : CommitDurability.Durable;
        var options = StorageOptions.Default with { OnFlush = RecordFlush };
        _environment = open(configure is null ? options : configure(options));
        try
        {
            using var tx = _environment.BeginWrite();
            tx.OpenOrCreateTree(TreeName);
            tx.Commit();
        }
        catch
        {
            _environment.Dispose();
            throw;
        }
    }

    public void Commit(KeyValueBatch batch)
    {
        CommitStats stats;
        var allocatedBefore = GC.GetAllocatedBytesForCurrentThread();
        using (var tx = _environment.BeginWrite())
        {
            PutAll(tx, batch);
            stats = tx.Commit(_durability);
        }
        _allocatedBytes += GC.GetAllocatedBytesForCurrentThread() - allocatedBefore;
        Record(stats);
    }

    public ValueTask CommitPipelined(KeyValueBatch batch)
    {
        ValueTask<CommitStats> durable;
        var allocatedBefore = GC.GetAllocatedBytesForCurrentThread();
        using (var tx = _environment.BeginWrite())
        {
            PutAll(tx, batch);
            durable = tx.CommitAsync(_durability);
        }
        _allocatedBytes += GC.GetAllocatedBytesForCurrentThread() - allocatedBefore;
        if (!durable.IsCompletedSuccessfully) return RecordWhenDurable(durable);
        Record(durable.Result);
        return ValueTask.CompletedTask;

        async ValueTask RecordWhenDurable(ValueTask<CommitStats> commit) => Record(await commit.ConfigureAwait(false));
    }

    /// <summary>One commit's figures; under a lock, as a pipelined commit's come from the thread its write completed on.</summary>
    private void Record(CommitStats stats)
    {
        lock (_recordLock)
        {
            _pagesModified.Add(stats.PagesModified);
            _leafPages.Add(stats.LeafPages);
            _branchPages.Add(stats.BranchPages);
            _overflowPages.Add(stats.OverflowPages);
            _otherPages.Add(stats.OtherPages);
            _journalBytes.Add(stats.JournalBytes);
            if (stats.Compressed) _compressedCommits++;
        }
    }

    public void CommitDeletes(KeyValueBatch batch)
    {
        using var tx = _environment.BeginWrite();
        var tree = tx.OpenTree(TreeName);
        for (var i = 0; i < batch.Count; i++) tree.Delete(batch.Key(i));
        tx.Commit(_durability);
    }

    public string? Compact()
    {
        _environment.Compact();
        return null;
    }

    public void CommitMerged(KeyValueBatch batch) => _environment.Write(tx => PutAll(tx, batch));

    /// <summary>The batch's puts into the one tree.</summary>
    private static void PutAll(WriteTransaction tx, KeyValueBatch batch)
    {
        var tree = tx.OpenTree(TreeName);
        for (var i = 0; i < batch.Count; i++) tree.Put(batch.Key(i), batch.Value(i));
    }

    public IEngineReader BeginRead() => new StorageEngineReader(_environment);

    /// <summary>The environment's full hot backup: one file, <c>full-&lt;transaction&gt;.storage-backup</c>, written and synced.</summary>
    public EngineBackup Backup(string directory)
    {
        var result = _environment.BackupAsync(directory).GetAwaiter().GetResult();
        return new EngineBackup(directory, result.TransactionId,
        [
            new("backup: pages / stream bytes", $"{Format.Count(result.Pages)} / {Format.Bytes(result.Bytes)}"),
            new("backup: seconds as it reports them (before its file is synced)", Format.Seconds(result.Duration.TotalSeconds)),
        ]);
    }

    public IEngineWriter CreateWriter() => new Writer(_environment, _durability);

    /// <summary>The environment's statistics now, or as they were just before it was disposed.</summary>
    public EnvironmentStats Stats => _statsBeforeDispose ?? _environment.GetStats();

    /// <summary>Every flush to the data file since open, in order (W8's table).</summary>
    public IReadOnlyList<FlushStats> FlushLog => [.. _flushLog];

    /// <summary>Commits without the per-commit figures (those are gathered on one thread only).</summary>
    private sealed class Writer(StorageEnvironment environment, CommitDurability durability) : IAsyncEngineWriter
    {
        public void Commit(KeyValueBatch batch)
        {
            using var tx = environment.BeginWrite();
            PutAll(tx, batch);
            tx.Commit(durability);
        }

        public async ValueTask CommitAsync(KeyValueBatch batch)
        {
            using var tx = await environment.BeginWriteAsync().ConfigureAwait(false);
            PutAll(tx, batch);
            await tx.CommitAsync(durability).ConfigureAwait(false);
        }

        public void Dispose()
        {
        }
    }

    public IReadOnlyList<Figure> Counters()
    {
        var figures = new List<Figure>();
        if (_pagesModified.Count > 0)
        {
            figures.Add(new("pages modified / tx (avg / max / stddev)", $"{Format.Decimal(_pagesModified.Mean)} / {Format.Count((long)_pagesModified.Max)} / {Format.Decimal(_pagesModified.StandardDeviation)}"));
            figures.Add(new("leaf / branch / overflow / other pages / tx (avg)", $"{Format.Decimal(_leafPages.Mean)} / {Format.Decimal(_branchPages.Mean)} / {Format.Decimal(_overflowPages.Mean)} / {Format.Decimal(_otherPages.Mean)}"));
            figures.Add(new("journal bytes / tx (avg)", Format.Count((long)Math.Round(_journalBytes.Mean))));
            figures.Add(new("compressed journal entries", Format.Count(_compressedCommits)));
            figures.Add(new("managed bytes allocated / tx (avg)", Format.Count((long)Math.Round(_allocatedBytes / (double)_pagesModified.Count))));
        }
        figures.Add(new("flushes (count / pages / runs)", $"{Format.Count(Interlocked.Read(ref _flushes))} / {Format.Count(Interlocked.Read(ref _flushedPages))} / {Format.Count(Interlocked.Read(ref _flushRuns))}"));
        figures.Add(new("flushed bytes", Format.Bytes(Interlocked.Read(ref _flushedBytes))));
        if (_statsBeforeDispose is { } stats)
        {
            figures.Add(new("journal writes / bytes (before dispose)", $"{Format.Count(stats.Journal.Writes)} / {Format.Bytes(stats.Journal.Bytes)}"));
            figures.Add(new("data file syncs (before dispose)", Format.Count(stats.Flush.Syncs)));
            figures.Add(new("journal direct I/O", stats.Journal.DirectIo ? "yes" : "no"));
            var writes = stats.Journal.WriteMethod;
            figures.Add(new("journal durable writes: method in use (files choosing direct / buffered; last medians, us)",
                $"{writes.Method} ({Format.Count(writes.DirectSyncChosen)} / {Format.Count(writes.BufferedThenSyncChosen)}; {Format.Decimal(writes.DirectSyncMedian.TotalMicroseconds)} / {Format.Decimal(writes.BufferedThenSyncMedian.TotalMicroseconds)})"));
            if (stats.Commits.Latency.Count > 0)
            {
                figures.Add(new("commit latency p50 / p99 / p99.9 / max (ms)", Format.Latencies(stats.Commits.Latency)));
                figures.Add(new("journal write latency p50 / p99 / p99.9 / max (ms)", Format.Latencies(stats.Journal.WriteLatency)));
                figures.AddRange(CommitPhaseFigures(stats.Commits.Phases));
            }
        }
        return figures;
    }

    /// <summary>
    /// The average write transaction, phase by phase, in microseconds (<see cref="CommitPhaseTimes"/>); what is left of
    /// the workload's time is the caller's own work between transactions and the final flush at dispose.
    /// </summary>
    private static IEnumerable<Figure> CommitPhaseFigures(CommitPhaseTimes phases)
    {
        var n = Math.Max(1, phases.Transactions);
        string Us(TimeSpan t) => Format.Decimal(t.TotalMicroseconds / n);
        yield return new("per tx, us: write lock wait / body (of which page copies)", $"{Us(phases.WriteLockWait)} / {Us(phases.TransactionBody)} ({Us(phases.PageCopies)})");
        yield return new("per tx, us: checksums / diffs / entry finish", $"{Us(phases.Checksums)} / {Us(phases.Diffs)} / {Us(phases.EntryFinish)}");
        yield return new("per tx, us: journal switch / durable write / publish (of which flush lock wait)", $"{Us(phases.JournalSwitches)} / {Us(phases.DurableWrites)} / {Us(phases.Publish)} ({Us(phases.PruneLockWait)})");
    }

    public void Dispose()
    {
        if (_disposed) return;
        _disposed = true;
        // Taken before Dispose: afterwards the environment's files are closed.
        _statsBeforeDispose = _environment.GetStats();
        _environment.Dispose();
    }

    // Runs on the flusher's thread.
    private void RecordFlush(FlushStats flush)
    {
        _flushLog.Enqueue(flush);
        Interlocked.Increment(ref _flushes);
        Interlocked.Add(ref _flushedPages, flush.PagesWritten);
        Interlocked.Add(ref _flushRuns, flush.Runs);
        Interlocked.Add(ref _flushedBytes, flush.BytesWritten);
    }
}
