using System.Diagnostics;
using System.Runtime.CompilerServices;
using Microsoft.Win32.SafeHandles;
using Storage.Allocation;
using Storage.Environments;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
using Storage.Transactions;

namespace Storage;

/// <summary>
/// An environment: a directory holding one data file of B+Trees and its journal, opened by one process
/// at a time. One write transaction at a time, any number of snapshot readers. Dispose it to flush
/// and sync everything and release the directory.
/// </summary>
public sealed partial class StorageEnvironment : IDisposable
{
    private readonly SemaphoreSlim _writeLock = new(1, 1);
    private readonly Dictionary<long, DirtyPage> _dirtyPages = [];
    private readonly SafeFileHandle _lockHandle;
    private readonly Flusher _flusher;
    private readonly JournalEntryBuilder _entryBuilder;
    private readonly List<ScratchBuffer> _pruned = [];
    private readonly List<long> _snapshots = [];
    private readonly Diagnostics.StorageMetrics _metrics;
    private EnvironmentState _state;
    private int _lifetimeReferences = 1;
    private volatile bool _disposed;
    private volatile Exception? _poison;
    private long _commits;
    private long _pagesModified;
    private long _writerBeganTimestamp;
    private StackTrace? _writerBeganAt;

    private StorageEnvironment(string directory, StorageOptions options, SafeFileHandle lockHandle, DataFile dataFile, in FileHeader header, long recovered)
    {
        DirectoryPath = directory;
        Options = options;
        _lockHandle = lockHandle;
        DataFile = dataFile;
        // The directory lock is held: a scratch file of this environment is a crash's leftover.
        ScratchFile.RemoveStale(directory, header.EnvironmentId);
        Scratch = new ScratchPool(options.PoisonFreedScratch, options.SpillScratchToFile ? new ScratchFile(directory, header.EnvironmentId) : null);
        Reclaimer = new ScratchReclaimer(Scratch);
        ReaderMonitor = new ReaderMonitor(this);
        EnvironmentId = header.EnvironmentId;
        RecoveredTransactions = recovered;
        _state = new EnvironmentState(header.LastSyncedTransactionId, header.RootTree, header.NextPageNumber);
        var journalDirectory = Path.Combine(directory, StorageEnvironmentNames.JournalDirectory);
        Journal = new JournalWriter(journalDirectory, FirstFreeJournalNumber(journalDirectory, header.JournalFileNumber), options.MinJournalFileSizeBytes, options.MaxJournalFileSizeBytes, dataFile.Io, options.FaultInjector);
        _entryBuilder = new JournalEntryBuilder(options.CompressionThresholdBytes);
        _flusher = new Flusher(this, header.LastSyncedTransactionId, header.Sequence);
        LoadFreeSpace();
        _flusher.Start();
        _metrics = new Diagnostics.StorageMetrics(this);
    }

    /// <summary>The environment's directory (full path).</summary>
    public string DirectoryPath { get; }

    /// <summary>The options it was opened with.</summary>
    public StorageOptions Options { get; }

    internal ulong EnvironmentId { get; }

    internal long RecoveredTransactions { get; }

    internal DataFile DataFile { get; }

    internal PageTable PageTable { get; } = new();

    internal ScratchPool Scratch { get; }

    internal ReaderTable Readers { get; } = new();

    internal ReaderMonitor ReaderMonitor { get; }

    internal ScratchReclaimer Reclaimer { get; }

    /// <summary>Taken by the writer to prune superseded versions and by the flusher to choose and collect what it writes.</summary>
    internal object PruneLock { get; } = new();

    internal FreeSpaceMap FreeSpace { get; } = new();

    internal JournalWriter Journal { get; }

    internal EnvironmentState CurrentState => Volatile.Read(ref _state);

    /// <summary>
    /// Opens the environment in <paramref name="directory"/>, creating it when missing (unless the
    /// options say not to), and replays the journal after a crash.
    /// </summary>
    /// <exception cref="StorageException">Another process has it open (<see cref="StorageErrorCode.EnvironmentLocked"/>), or an I/O call failed.</exception>
    /// <exception cref="StorageCorruptedException">A file is damaged; nothing was changed.</exception>
    public static StorageEnvironment Open(string directory, StorageOptions? options = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        options ??= StorageOptions.Default;
        options.Validate();
        directory = Path.GetFullPath(directory);
        if (!Directory.Exists(directory))
        {
            if (!options.CreateIfMissing) throw new StorageException(StorageErrorCode.IoFailure, $"The environment directory '{directory}' does not exist.", directory, 2);
            Directory.CreateDirectory(directory);
            SyncParent(directory, options.FaultInjector);
        }
        var io = PlatformIo.Resolve(options.IoBackend, options.LowPriorityFlush);
        var lockHandle = TakeLock(directory);
        DataFile? dataFile = null;
        try
        {
            var dataPath = Path.Combine(directory, DataFile.FileName);
            if (!File.Exists(dataPath))
            {
                if (!options.CreateIfMissing) throw new StorageException(StorageErrorCode.IoFailure, $"There is no environment in '{directory}'.", dataPath, 2);
                EnvironmentCreator.Create(directory, io, options.FaultInjector);
            }
            var journalDirectory = Path.Combine(directory, StorageEnvironmentNames.JournalDirectory);
            if (!Directory.Exists(journalDirectory))
            {
                Directory.CreateDirectory(journalDirectory);
                FileIo.SyncDirectory(directory, options.FaultInjector);
            }
            dataFile = DataFile.Open(dataPath, io, options.FaultInjector);
            var header = ReadBestHeader(dataFile);
            var recovered = RecoverJournal(dataFile, journalDirectory, ref header, options.FaultInjector);
            return new StorageEnvironment(directory, options, lockHandle, dataFile, header, recovered);
        }
        catch
        {
            dataFile?.Dispose();
            lockHandle.Dispose();
            throw;
        }
    }

    /// <summary>Makes a newly created directory's own entry durable.</summary>
    private static void SyncParent(string directory, IFaultInjector? faults)
    {
        var parent = Path.GetDirectoryName(directory);
        if (parent is not null) FileIo.SyncDirectory(parent, faults);
    }

    private static SafeFileHandle TakeLock(string directory)
    {
        var path = Path.Combine(directory, StorageEnvironmentNames.LockFile);
        try
        {
            // FileShare.None is an exclusive flock on Unix and a share-mode lock on Windows, in and across processes.
            return File.OpenHandle(path, FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.None);
        }
        catch (IOException e)
        {
            throw new StorageException(StorageErrorCode.EnvironmentLocked, $"The environment '{directory}' is open in another process (or another instance in this one).", path, e.HResult & 0xFFFF, e);
        }
        catch (UnauthorizedAccessException e)
        {
            throw FileIo.Translate(e, "open", path);
        }
    }

    private static FileHeader ReadBestHeader(DataFile dataFile)
    {
        var first = FileHeaderIo.TryRead(dataFile, 0, out var firstProblem);
        var second = FileHeaderIo.TryRead(dataFile, 1, out var secondProblem);
        FileHeader header;
        if (first is null && second is null)
        {
            throw new StorageCorruptedException($"Neither file header is valid (slot 0: {firstProblem}; slot 1: {secondProblem}).", dataFile.Path, 0, 0);
        }
        else if (first is null) header = second!.Value;
        else if (second is null) header = first.Value;
        else header = first.Value.Sequence >= second.Value.Sequence ? first.Value : second.Value;

        if (header.FormatVersion != FileHeader.CurrentFormatVersion || header.PageSizeBytes != PageLayout.PageSizeBytes)
        {
            throw new StorageException(StorageErrorCode.FormatMismatch, $"The data file has format {header.FormatVersion} with {header.PageSizeBytes}-byte pages; this library reads format {FileHeader.CurrentFormatVersion} with {PageLayout.PageSizeBytes}-byte pages.");
        }
        var minimumPages = FreeSpaceLayout.FirstUsablePage(0) + 1;
        if (header.NextPageNumber < minimumPages || header.RootTree.RootPage < 2 || header.RootTree.RootPage >= header.NextPageNumber || header.JournalFileNumber < 0 || header.JournalOffsetBytes < 0)
        {
            throw new StorageCorruptedException("The file header describes an impossible environment.", dataFile.Path, 0, 0);
        }
        if (header.NextPageNumber > dataFile.PageCount)
        {
            throw new StorageCorruptedException($"The data file holds {dataFile.PageCount} pages but its header says {header.NextPageNumber} are in use: it was truncated.", dataFile.Path, dataFile.PageCount, dataFile.PageCount * PageLayout.PageSizeBytes);
        }
        return header;
    }

    private static long RecoverJournal(DataFile dataFile, string journalDirectory, ref FileHeader header, IFaultInjector? faults)
    {
        using var recovery = new Recovery(dataFile);
        var replayed = recovery.Replay(journalDirectory, header);
        var files = JournalEntryReader.ListFiles(journalDirectory);
        if (!replayed && files.Count == 0) return 0;
        var nextJournal = Math.Max(header.JournalFileNumber, files.Count == 0 ? 0 : files[^1].Number + 1);
        if (replayed)
        {
            recovery.WritePages();
            header.Sequence++;
            header.LastSyncedTransactionId = recovery.LastTransactionId;
            header.NextPageNumber = recovery.NextPageNumber;
            header.RootTree = recovery.RootTree;
        }
        else
        {
            header.Sequence++;
        }
        header.JournalFileNumber = nextJournal;
        header.JournalOffsetBytes = 0;
        FileHeaderIo.Write(dataFile, header);
        dataFile.Sync();
        // Every entry is in the synced data file now: the old journal files are not needed.
        foreach (var (_, path) in files) File.Delete(path);
        FileIo.SyncDirectory(journalDirectory, faults);
        return recovery.EntriesReplayed;
    }

    private static long FirstFreeJournalNumber(string journalDirectory, long headerNumber)
    {
        var files = JournalEntryReader.ListFiles(journalDirectory);
        return files.Count == 0 ? headerNumber : Math.Max(headerNumber, files[^1].Number + 1);
    }

    private unsafe void LoadFreeSpace()
    {
        var state = CurrentState;
        var mapping = DataFile.AcquireMapping();
        try
        {
            FreeSpace.Load(page =>
            {
                if (page >= mapping.PageCount) throw new StorageCorruptedException("A free-space bitmap page is past the end of the data file.", DataFile.Path, page);
                var pointer = mapping.PagePointer(page);
                DataFile.Validate(pointer, page, mapping.PageCount);
                if (((PageHeader*)pointer)->Flags != PageFlags.FreeSpaceBitmap) throw new StorageCorruptedException("A free-space bitmap page is not a bitmap page.", DataFile.Path, page, page * PageLayout.PageSizeBytes);
                return (IntPtr)pointer;
            }, state.NextPageNumber);
        }
        finally
        {
            mapping.Release();
        }
    }

    /// <summary>Begins a read transaction on the latest committed snapshot.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)] // the stack it records starts at its caller
    public ReadTransaction BeginRead()
    {
        EnsureOpen();
        AddLifetimeReference();
        try
        {
            var began = Stopwatch.GetTimestamp();
            var beganAt = Options.TrackTransactionStacks ? new StackTrace(1, fNeedFileInfo: true) : null;
            var slot = Readers.Register(ref _state, out var state, ReaderTable.SlotKind.Reader, began, beganAt);
            return new ReadTransaction(this, new PageTransaction(this, slot, state, dirty: null), began, beganAt);
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
        var beganAt = Options.TrackTransactionStacks ? new StackTrace(1, fNeedFileInfo: true) : null;
        if (!_writeLock.Wait(timeout ?? Options.WriteTransactionTimeout)) ThrowWriteTimeout();
        return StartWrite(beganAt);
    }

    /// <summary>Says how long the running write transaction has been open and, when stacks are tracked, where it was begun.</summary>
    private void ThrowWriteTimeout()
    {
        var began = Volatile.Read(ref _writerBeganTimestamp);
        var beganAt = Volatile.Read(ref _writerBeganAt);
        var age = began == 0 ? "" : $" (open for {Stopwatch.GetElapsedTime(began).TotalSeconds:N1} s)";
        var where = beganAt is not null
            ? $" It was begun at:{System.Environment.NewLine}{beganAt}"
            : " Set StorageOptions.TrackTransactionStacks to see where it was begun.";
        throw new StorageException(StorageErrorCode.WriteTransactionTimeout, $"Another write transaction is still running{age}.{where}");
    }

    /// <summary>Begins the write transaction, waiting asynchronously for the current one to end.</summary>
    public async ValueTask<WriteTransaction> BeginWriteAsync(CancellationToken cancellationToken = default)
    {
        EnsureWritable();
        var beganAt = Options.TrackTransactionStacks ? new StackTrace(1, fNeedFileInfo: true) : null;
        await _writeLock.WaitAsync(cancellationToken).ConfigureAwait(false);
        return StartWrite(beganAt);
    }

    private WriteTransaction StartWrite(StackTrace? beganAt)
    {
        try
        {
            EnsureWritable();
            AddLifetimeReference();
        }
        catch
        {
            _writeLock.Release();
            throw;
        }
        var began = Stopwatch.GetTimestamp();
        Volatile.Write(ref _writerBeganAt, beganAt);
        Volatile.Write(ref _writerBeganTimestamp, began);
        var slot = Readers.Register(ref _state, out var state, ReaderTable.SlotKind.Writer, began, beganAt);
        Debug.Assert(_dirtyPages.Count == 0, "the previous write transaction left no dirty pages");
        return new WriteTransaction(this, new PageTransaction(this, slot, state, _dirtyPages), began, beganAt);
    }

    internal void ReleaseTransaction(Transaction transaction)
    {
        if (transaction.IsWritable)
        {
            Volatile.Write(ref _writerBeganTimestamp, 0);
            Volatile.Write(ref _writerBeganAt, null);
            _writeLock.Release();
        }
        ReleaseLifetimeReference();
    }

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

    private void EnsureOpen()
    {
        if (_disposed) throw new StorageException(StorageErrorCode.EnvironmentClosed, $"The environment '{DirectoryPath}' was disposed.");
    }

    private void EnsureWritable()
    {
        EnsureOpen();
        var poison = _poison;
        if (poison is not null)
        {
            throw new StorageException(StorageErrorCode.EnvironmentPoisoned, $"The environment stopped accepting writes after a failure ({poison.Message}); reopen it to recover from the journal.", poison);
        }
    }

    /// <summary>Stops writes after a failure that only the journal can repair (a failed fsync or journal write).</summary>
    internal void Poison(Exception cause) => Interlocked.CompareExchange(ref _poison, cause, null);

    /// <summary>Writes everything committed to the data file and syncs it now (normally done in the background).</summary>
    public void Checkpoint()
    {
        EnsureWritable();
        AddLifetimeReference();
        try
        {
            _flusher.FlushAndSync(forceSync: true);
        }
        catch (Exception e)
        {
            Poison(e);
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
            Commits = Interlocked.Read(ref _commits),
            JournalWrites = Journal.DurableWrites,
            JournalBytes = Journal.BytesWritten,
            PagesModified = Interlocked.Read(ref _pagesModified),
            Flushes = _flusher.Flushes,
            FlushedPages = _flusher.FlushedPages,
            FlushRuns = _flusher.FlushRuns,
            FlushedBytes = _flusher.FlushedBytes,
            Syncs = _flusher.Syncs,
            LastSyncedTransactionId = _flusher.SyncedUpTo,
            RecoveredTransactions = RecoveredTransactions,
            DataFileBytes = DataFile.PageCount * PageLayout.PageSizeBytes,
            PagesInUseOrFree = state.NextPageNumber,
            FreePages = FreeSpace.TotalFreePages,
            ScratchBytes = Scratch.BytesInUse,
            JournalFiles = Journal.FileCount,
            ActiveTransactions = Readers.ActiveCount,
            OldestReaderAge = readers.Reader?.Age ?? TimeSpan.Zero,
            OldestReaderTransactionId = readers.Reader?.TransactionId ?? 0,
            PinnedBytes = readers.PinnedBytes,
            ScratchSpilledBytes = Scratch.SpilledBytes,
            ReaderWarnings = ReaderMonitor.Warnings,
            ReadersEnded = ReaderMonitor.ReadersEnded,
            CommitsRefused = ReaderMonitor.CommitsRefused,
            LeakedTransactions = ReaderMonitor.Leaked,
            IoBackend = DataFile.Io.Name,
            JournalDirectIo = Journal.IsDirect,
        };
    }

    private void AddLifetimeReference()
    {
        while (true)
        {
            var current = Volatile.Read(ref _lifetimeReferences);
            if (current == 0) EnsureOpen();
            if (Interlocked.CompareExchange(ref _lifetimeReferences, current + 1, current) == current) return;
        }
    }

    private void ReleaseLifetimeReference()
    {
        if (Interlocked.Decrement(ref _lifetimeReferences) != 0) return;
        // The last transaction is gone: nothing can point into scratch memory or the map any more.
        Reclaimer.ReleaseAll();
        foreach (var buffer in PageTable.AllBuffers()) buffer.Release();
        Scratch.Dispose();
        DataFile.Dispose();
        _entryBuilder.Dispose();
        // Only now may another instance open the directory: until here a transaction of this one could still
        // read the data file, and a new instance's recovery would change pages under its snapshot.
        _lockHandle.Dispose();
    }
}
