using System.Diagnostics;
using System.Runtime.CompilerServices;
using Microsoft.Win32.SafeHandles;
using Storage.Allocation;
using Storage.Commit;
using Storage.Diagnostics;
using Storage.Flush;
using Storage.Journal;
using Storage.Paging;
using Storage.Recovery;
using Storage.Scratch;
using Storage.State;
using Storage.Transactions;

namespace Storage;

/// <summary>
/// An environment: a directory holding one data file of B+Trees and its journal, opened by one process
/// at a time. One write transaction at a time, any number of snapshot readers. Dispose it to flush
/// and sync everything and release the directory.
/// </summary>
/// <remarks>
/// The public face: it opens (<see cref="EnvironmentOpener"/>), begins transactions and hands out what the engine's parts
/// report. Commits go through the <see cref="CommitPipeline"/>, the background work is the <see cref="Flusher"/>'s, and the
/// journal is an <see cref="IEnvironmentJournal"/>; each is given the parts it works with, never the environment.
/// </remarks>
public sealed partial class StorageEnvironment : IDisposable, IAsyncDisposable
{
    private readonly SafeFileHandle _lockHandle;
    private readonly EnvironmentHealth _health = new();
    private readonly EnvironmentStates _states;
    private readonly WriterLock _writerLock = new();
    private readonly WriterContext _writer;
    private readonly Flusher _flusher;
    private readonly WriteMerger _merger;
    private readonly StorageMetrics _metrics;
    private int _lifetimeReferences = 1;
    private volatile bool _disposed;
    private volatile bool _journalClosed;

    /// <summary>An environment over a recovered state; nothing runs (no flusher) until <see cref="Start"/>.</summary>
    internal StorageEnvironment(string directory, StorageOptions options, SafeFileHandle lockHandle, DataFile dataFile, in FileHeader header, IEnvironmentJournal journal)
    {
        DirectoryPath = directory;
        Options = options;
        EnvironmentId = header.EnvironmentId;
        _lockHandle = lockHandle;
        DataFile = dataFile;
        Journal = journal;
        _states = new EnvironmentStates(new EnvironmentState(header.LastSyncedTransactionId, header.RootTree, header.NextPageNumber));
        // The directory lock is held: a scratch file of this environment is a crash's leftover.
        ScratchFile.RemoveStale(directory, header.EnvironmentId);
        Scratch = new ScratchPool(options.Hooks.PoisonFreedScratch, options.SpillScratchToFile ? new ScratchFile(directory, header.EnvironmentId) : null,
            Flusher.FlushListPages(options));
        Reclaimer = new ScratchReclaimer(Scratch);
        ReaderMonitor = new ReaderMonitor(options, Readers, PageTable, Scratch, _states);
        var versions = new VersionRetention(PageTable, Readers, _states, journal, Scratch, Reclaimer, header.LastSyncedTransactionId);
        _flusher = new Flusher(new FlushPort(EnvironmentId, options, dataFile, PageTable, Readers, ReaderMonitor, Scratch, Reclaimer, journal, versions, _states,
            _writerLock, _health), header.LastSyncedTransactionId, header.Sequence);
        _metrics = new StorageMetrics(directory);
        try
        {
            Commits = new CommitPipeline(EnvironmentId, options, _health, dataFile, FreeSpace, PageTable, Scratch, _states, journal, versions, _flusher,
                ReaderMonitor, _metrics);
        }
        catch
        {
            _metrics.Dispose();
            throw;
        }
        _writer = new WriterContext(Scratch, FreeSpace, _health, options.FillSiblingsBeforeSplit);
        _merger = new WriteMerger(this);
        // Last: a collection reads the stats of the whole environment.
        _metrics.Observe(this);
    }

    /// <summary>Recovery is committed: the background work starts.</summary>
    internal void Start(RecoveryStats recovery)
    {
        Recovery = recovery;
        _flusher.Start();
        if (Options.ArchiveDirectory is { } archive)
        {
            _archiver = new Backup.Archiver(this, archive, Options.ArchiveInterval);
            _archiver.Start();
        }
    }

    private Backup.Archiver? _archiver;

    /// <summary>Test seam: one round of the continuous archive, now, on the calling thread.</summary>
    internal void ShipArchiveNow() => _archiver?.ShipOnce(takeBase: true);

    /// <summary>The environment's directory (full path).</summary>
    public string DirectoryPath { get; }

    /// <summary>The options it was opened with.</summary>
    public StorageOptions Options { get; }

    internal ulong EnvironmentId { get; }

    internal RecoveryStats Recovery { get; private set; }

    internal DataFile DataFile { get; }

    internal PageTable PageTable { get; } = new();

    internal ScratchPool Scratch { get; }

    internal ReaderTable Readers { get; } = new();

    internal ReaderMonitor ReaderMonitor { get; }

    internal ScratchReclaimer Reclaimer { get; }

    internal FreeSpaceMap FreeSpace { get; } = new();

    internal IEnvironmentJournal Journal { get; }

    internal CommitPipeline Commits { get; }

    /// <summary>The state readers begin on: the last commit durable in the journal (or a lazy one, visible at once).</summary>
    internal EnvironmentState CurrentState => _states.Readable;

    /// <summary>The state the next write transaction begins on: the last commit appended, durable or not (read under the write lock).</summary>
    internal EnvironmentState WriterState => _states.Writer;

    /// <summary>
    /// Opens the environment in <paramref name="directory"/>, creating it when missing (unless the
    /// options say not to), and replays the journal after a crash.
    /// </summary>
    /// <exception cref="StorageException">Another process has it open (<see cref="StorageErrorCode.EnvironmentLocked"/>), the path is not an
    /// environment (<see cref="StorageErrorCode.NotAnEnvironment"/>), or an I/O call failed.</exception>
    /// <exception cref="StorageCorruptedException">A file is damaged; nothing was changed.</exception>
    public static StorageEnvironment Open(string directory, StorageOptions? options = null) => EnvironmentOpener.Open(directory, options, journalFactory: null);

    /// <summary>Begins a read transaction on the latest committed snapshot.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)] // the stack it records starts at its caller
    public ReadTransaction BeginRead()
    {
        EnsureOpen();
        AddLifetimeReference();
        try
        {
            var began = Stopwatch.GetTimestamp();
            var beganAt = TransactionOrigin.Capture(Options);
            var slot = Readers.Register(ref _states.ReadableSlot, out var state, ReaderTable.SlotKind.Reader, began, beganAt);
            return new ReadTransaction(this, new PageTransaction(Readers, PageTable, DataFile, slot, state, writer: null), began, beganAt);
        }
        catch
        {
            ReleaseLifetimeReference();
            throw;
        }
    }

    /// <summary>Begins the write transaction, waiting up to <paramref name="timeout"/> (default: the options' timeout) for the current one to end.</summary>
    /// <exception cref="StorageException"><see cref="StorageErrorCode.WriteTransactionTimeout"/>, <see cref="StorageErrorCode.EnvironmentPoisoned"/> or <see cref="StorageErrorCode.EnvironmentClosed"/>.</exception>
    [MethodImpl(MethodImplOptions.NoInlining)] // the stack it records starts at its caller
    public WriteTransaction BeginWrite(TimeSpan? timeout = null)
    {
        EnsureWritable();
        var beganAt = TransactionOrigin.Capture(Options);
        var waitStarted = CommitProfile.Now();
        _writerLock.Enter(timeout ?? Options.WriteTransactionTimeout);
        return StartWrite(beganAt, waitStarted, onThisThread: true);
    }

    /// <summary>Begins the write transaction, waiting asynchronously for the current one to end.</summary>
    public async ValueTask<WriteTransaction> BeginWriteAsync(CancellationToken cancellationToken = default)
    {
        EnsureWritable();
        var beganAt = TransactionOrigin.Capture(Options);
        var waitStarted = CommitProfile.Now();
        await _writerLock.EnterAsync(cancellationToken).ConfigureAwait(false);
        return StartWrite(beganAt, waitStarted, onThisThread: false);
    }

    /// <param name="beganAt">Where it was begun, when stacks are tracked.</param>
    /// <param name="waitStarted">When the wait for the write lock began.</param>
    /// <param name="onThisThread">Begun synchronously on the calling thread (<see cref="BeginWrite"/>): a <see cref="Dispose"/> in the same flow while it is open is a transaction forgotten.</param>
    private WriteTransaction StartWrite(StackTrace? beganAt, long waitStarted, bool onThisThread)
    {
        try
        {
            EnsureWritable();
            AddLifetimeReference();
        }
        catch
        {
            _writerLock.Release();
            throw;
        }
        var began = Stopwatch.GetTimestamp();
        CommitProfile.Add(ref Commits.Profile.WriteLockWaitTicks, waitStarted, began);
        var slot = Readers.Register(ref _states.WriterSlot, out var state, ReaderTable.SlotKind.Writer, began, beganAt);
        _writer.Begin();
        var transaction = new WriteTransaction(this, new PageTransaction(Readers, PageTable, DataFile, slot, state, _writer), began, beganAt);
        _writerLock.Began(began, beganAt, onThisThread);
        return transaction;
    }

    /// <summary>Appends a write transaction's commit (the first half of committing; the write lock is released after it).</summary>
    /// <remarks>
    /// A dispose begun meanwhile waits for this transaction (it holds the write lock), so only a closed journal refuses
    /// the commit; <see cref="EnsureWritable"/> would refuse it as soon as the dispose began.
    /// </remarks>
    internal PendingCommit AppendCommit(WriteTransaction transaction, CommitDurability durability)
    {
        if (_journalClosed) throw new StorageException(StorageErrorCode.EnvironmentClosed, $"The environment '{DirectoryPath}' was closed before this transaction committed; nothing it wrote is kept.");
        _health.ThrowIfPoisoned();
        if (_archiver is { } archiver && Options.ArchiveMaxLagTransactions > 0 && WriterState.TransactionId - archiver.ArchivedThrough >= Options.ArchiveMaxLagTransactions)
        {
            throw new StorageException(StorageErrorCode.ArchiveBehind,
                $"The continuous archive of '{DirectoryPath}' holds transactions up to {archiver.ArchivedThrough}, more than {Options.ArchiveMaxLagTransactions} behind; the commit is refused and nothing was written. " +
                $"See GetStats().Archive ({archiver.Snapshot(Journal.DurableTransactionId).LastError ?? "no failure so far"}).");
        }
        return Commits.Append(transaction, durability);
    }

    internal void ReleaseTransaction(Transaction transaction)
    {
        if (transaction.IsWritable) ReleaseWriteLock();
        ReleaseLifetimeReference();
    }

    /// <summary>The write transaction ended or appended its commit: the next one may begin.</summary>
    internal void ReleaseWriteLock() => _writerLock.Release();

    /// <summary>A transaction that released the write lock early is disposed.</summary>
    internal void ReleaseCommittedWriter() => ReleaseLifetimeReference();

    /// <summary>
    /// A transaction was collected without being disposed; its finalizer has released what it held. Counted and
    /// reported on the finalizer thread, even after the environment was disposed (the leak kept its directory locked).
    /// </summary>
    internal void ReportLeak(Transaction transaction) =>
        ReaderMonitor.RecordLeak(new LeakedTransaction
        {
            IsWrite = transaction.IsWritable,
            TransactionId = transaction.TransactionId,
            Age = Stopwatch.GetElapsedTime(transaction.BeganTimestamp),
            BeganAt = transaction.BeganAt?.ToString(),
        });

    /// <summary>
    /// Runs <paramref name="operation"/> in a write transaction merged with other callers' operations: the operations
    /// waiting when a merged transaction begins run in it, in the order they were submitted, and it commits once, in
    /// one durable write. The task completes, with that commit's stats, when the commit is durable.
    /// </summary>
    /// <remarks>
    /// <para>
    /// For many small independent writers (one put each, say), merging costs one transaction and one journal write
    /// per batch instead of per caller. An operation must only use the transaction it is given (not commit or dispose
    /// it), and must be safe to run more than once: when one operation throws, the merged transaction is rolled back
    /// and the others run again without it. The exception goes to that operation's caller only.
    /// </para>
    /// <para>
    /// <paramref name="cancellationToken"/> is observed until the operation runs; cancelled before, it is skipped and
    /// the task is cancelled. Once it has run, its commit can no longer be cancelled.
    /// </para>
    /// <para>
    /// Two threads of the environment's own, started at the first merged write, do the work: one runs the merged
    /// transactions, and hands each to the journal while it begins the next; the other waits for their durable
    /// writes and tells the callers. Neither depends on the thread pool.
    /// </para>
    /// </remarks>
    public Task<CommitStats> WriteAsync(Action<WriteTransaction> operation, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(operation);
        EnsureWritable();
        return _merger.WriteAsync(operation, cancellationToken);
    }

    /// <summary>
    /// As <see cref="WriteAsync(Action{WriteTransaction}, CancellationToken)"/>, returning what <paramref name="operation"/>
    /// returned (in the run that was committed, when it ran more than once) once the merged commit is durable.
    /// </summary>
    public async Task<T> WriteAsync<T>(Func<WriteTransaction, T> operation, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(operation);
        T result = default!;
        await WriteAsync(tx => { result = operation(tx); }, cancellationToken).ConfigureAwait(false);
        return result;
    }

    /// <summary>As <see cref="WriteAsync(Action{WriteTransaction}, CancellationToken)"/>, blocking the calling thread until the merged commit is durable.</summary>
    /// <exception cref="InvalidOperationException">Called from inside a merged write's operation, which would wait for itself.</exception>
    public CommitStats Write(Action<WriteTransaction> operation)
    {
        ArgumentNullException.ThrowIfNull(operation);
        EnsureWritable();
        return _merger.Write(operation);
    }

    private void EnsureOpen()
    {
        if (_disposed) throw new StorageException(StorageErrorCode.EnvironmentClosed, $"The environment '{DirectoryPath}' was disposed.");
    }

    private void EnsureWritable()
    {
        EnsureOpen();
        _health.ThrowIfPoisoned();
    }

    internal bool IsPoisoned => _health.IsPoisoned;

    /// <summary>Test seam: a background flush and sync, run now, leaving lazy commits' entries waiting.</summary>
    internal void FlushAsTheBackgroundWould() => _flusher.FlushAndSync(forceSync: true);

    /// <summary>Writes everything committed to the data file and syncs it now, and gives back scratch kept for read transactions that have ended (all normally done in the background).</summary>
    /// <exception cref="StorageFullException">Writing pages met a full disk; nothing was lost and the environment stays usable (a later flush writes them).</exception>
    public void Checkpoint()
    {
        EnsureWritable();
        AddLifetimeReference();
        try
        {
            // Lazy commits' entries first: they are published as the write returns, and a failed write poisons.
            Journal.WritePending();
            _flusher.FlushAndSync(forceSync: true, forceSweep: true, throwIfFull: true);
        }
        catch (StorageFullException) when (!IsPoisoned)
        {
            // Writing pages met a full disk: nothing was lost, commits go on, and a later flush writes them.
            throw;
        }
        catch (Exception e)
        {
            // Only the journal can repair what a failed flush or sync left: reopening recovers from it.
            _health.Poison(e);
            throw;
        }
        finally
        {
            ReleaseLifetimeReference();
        }
    }

    /// <summary>Counters since open and the current shape.</summary>
    public EnvironmentStats GetStats() => GetStats(ReaderMonitor.Measure());

    /// <summary>The stats with reader figures from <paramref name="readers"/> (the metrics pass a recent measurement instead of walking the page table per instrument).</summary>
    internal EnvironmentStats GetStats(ReaderPressure readers)
    {
        EnsureOpen();
        var state = CurrentState;
        return new EnvironmentStats
        {
            LastTransactionId = state.TransactionId,
            LastDurableTransactionId = Journal.DurableTransactionId,
            LastSyncedTransactionId = _flusher.SyncedUpTo,
            IoBackend = DataFile.Io.Name,
            Recovery = Recovery,
            Commits = new CommitActivity
            {
                Count = Commits.Commits,
                PagesModified = Commits.PagesModified,
                Phases = Commits.Profile.Snapshot(),
                Latency = Commits.Profile.CommitLatency.Summarize(),
            },
            Journal = new JournalActivity
            {
                Writes = Journal.DurableWrites,
                Bytes = Journal.BytesWritten,
                Files = Journal.FileCount,
                DirectIo = Journal.IsDirect,
                Shared = Journal.IsShared,
                WriteMethod = Journal.WritePolicy.Snapshot(),
                WriteLatency = Commits.Profile.JournalWriteLatency.Summarize(),
            },
            Flush = new FlushActivity
            {
                Count = _flusher.Flushes,
                Pages = _flusher.FlushedPages,
                Runs = _flusher.FlushRuns,
                Bytes = _flusher.FlushedBytes,
                DeferredForSpace = _flusher.FlushesDeferredForSpace,
                Syncs = _flusher.Syncs,
            },
            Space = new FileSpace
            {
                DataFileBytes = DataFile.PageCount * PageLayout.PageSizeBytes,
                PagesInUseOrFree = state.NextPageNumber,
                FreePages = FreeSpace.TotalFreePages,
                GivenBackBytes = DataFile.PunchedBytes + _flusher.Space.CutBytes,
            },
            Memory = new MemoryUse
            {
                ScratchBytes = Scratch.BytesInUse,
                ScratchSpilledBytes = Scratch.SpilledBytes,
                PinnedBytes = readers.PinnedBytes,
            },
            Archive = _archiver?.Snapshot(Journal.DurableTransactionId) ?? new ArchiveActivity { ArchivedThroughTransactionId = -1 },
            Readers = new ReaderActivity
            {
                ActiveTransactions = Readers.ActiveCount,
                OldestAge = readers.Reader?.Age ?? TimeSpan.Zero,
                OldestTransactionId = readers.Reader?.TransactionId ?? 0,
                Warnings = ReaderMonitor.Warnings,
                Ended = ReaderMonitor.ReadersEnded,
                CommitsRefused = ReaderMonitor.CommitsRefused,
                LeakedTransactions = ReaderMonitor.Leaked,
            },
        };
    }
}
