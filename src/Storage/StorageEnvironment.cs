using System.Diagnostics;
using System.Runtime.CompilerServices;
using Microsoft.Win32.SafeHandles;
using Storage.Allocation;
using Storage.Commit;
using Storage.Faults;
using Storage.Flush;
using Storage.Groups;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
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
public sealed partial class StorageEnvironment : IDisposable
{
    private readonly SemaphoreSlim _writeLock = new(1, 1);
    private readonly Dictionary<long, DirtyPage> _dirtyPages = [];
    private readonly SafeFileHandle _lockHandle;
    private readonly Flusher _flusher;
    private readonly JournalEntryBuilder _entryBuilder;
    private readonly DiffHelper _diffHelper;

    /// <summary>The thread-pool helper that diffs half of a large transaction's pages (tests switch it off).</summary>
    internal DiffHelper DiffHelper => _diffHelper;

    /// <summary>Whether this environment's journal entries are compressed (tests force it).</summary>
    internal CompressionPolicy Compression => _entryBuilder.Compression;

    private readonly List<ScratchBuffer> _pruned = [];
    private readonly List<long> _snapshots = [];
    private readonly Diagnostics.StorageMetrics _metrics;

    /// <summary>Where write transactions spend their time (<see cref="EnvironmentStats.CommitPhases"/>).</summary>
    internal Diagnostics.CommitProfile Profile { get; } = new();
    /// <summary>The state readers begin on: the last commit durable in the journal (or a lazy one, visible at once).</summary>
    private EnvironmentState _state;

    /// <summary>The state the next write transaction begins on: the last commit appended, durable or not (written by the writer only).</summary>
    private EnvironmentState _writerState;
    private int _lifetimeReferences = 1;
    private volatile bool _disposed;
    private volatile Exception? _poison;
    private long _commits;
    private long _pagesModified;
    private long _writerBeganTimestamp;
    private StackTrace? _writerBeganAt;

    /// <summary>An environment over a recovered state; nothing runs (no flusher) until <see cref="Start"/>.</summary>
    private StorageEnvironment(string directory, StorageOptions options, SafeFileHandle lockHandle, DataFile dataFile, in FileHeader header, IEnvironmentJournal journal)
    {
        DirectoryPath = directory;
        Options = options;
        WriterWorkspace.FillSiblingsBeforeSplit = options.FillSiblingsBeforeSplit;
        _lockHandle = lockHandle;
        DataFile = dataFile;
        // The directory lock is held: a scratch file of this environment is a crash's leftover.
        ScratchFile.RemoveStale(directory, header.EnvironmentId);
        Scratch = new ScratchPool(options.PoisonFreedScratch, options.SpillScratchToFile ? new ScratchFile(directory, header.EnvironmentId) : null);
        Reclaimer = new ScratchReclaimer(Scratch);
        ReaderMonitor = new ReaderMonitor(this);
        EnvironmentId = header.EnvironmentId;
        _state = new EnvironmentState(header.LastSyncedTransactionId, header.RootTree, header.NextPageNumber);
        _writerState = _state;
        _handedToFlusher = header.LastSyncedTransactionId;
        Journal = journal;
        journal.Attach(new JournalEvents(this));
        _entryBuilder = new JournalEntryBuilder(options.CompressionThresholdBytes);
        _diffHelper = new DiffHelper(options.CompressionThresholdBytes);
        _flusher = new Flusher(this, header.LastSyncedTransactionId, header.Sequence);
        _metrics = new Diagnostics.StorageMetrics(this);
    }

    private void Start() => _flusher.Start();

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

    /// <summary>Taken by the writer to prune superseded versions and by the flusher to choose and collect what it writes.</summary>
    internal Lock PruneLock { get; } = new();

    internal FreeSpaceMap FreeSpace { get; } = new();

    /// <summary>The working arrays of the write transaction's trees (one write transaction at a time).</summary>
    internal Trees.TreeWorkspace WriterWorkspace { get; } = new();

    /// <summary>The maps of the lines each page of the current write transaction changed.</summary>
    internal Storage.Commit.WrittenLines WriterLines { get; } = new();

    /// <summary>Pages the writer copied on their first change (it times one in <see cref="Transactions.PageTransaction.CopyTimingInterval"/>).</summary>
    internal int WriterPageCopies;

    internal IEnvironmentJournal Journal { get; }

    internal EnvironmentState CurrentState => Volatile.Read(ref _state);

    /// <summary>
    /// Opens the environment in <paramref name="directory"/>, creating it when missing (unless the
    /// options say not to), and replays the journal after a crash.
    /// </summary>
    /// <exception cref="StorageException">Another process has it open (<see cref="StorageErrorCode.EnvironmentLocked"/>), the path is not an
    /// environment (<see cref="StorageErrorCode.NotAnEnvironment"/>), or an I/O call failed.</exception>
    /// <exception cref="StorageCorruptedException">A file is damaged; nothing was changed.</exception>
    public static StorageEnvironment Open(string directory, StorageOptions? options = null) => Open(directory, options, journalFactory: null);

    /// <summary>What an environment's journal is made from, once recovery has read the header and listed the files.</summary>
    internal readonly record struct JournalContext(string JournalDirectory, ulong EnvironmentId, long FirstFreeFileNumber, PlatformIo Io, StorageOptions Options);

    /// <summary>
    /// Opens with a journal of the caller's making (a member of an environment group with shared journals), or the
    /// environment's own <see cref="JournalWriter"/> when <paramref name="journalFactory"/> is null. A journal that is not
    /// the environment's own never continues in a file of an earlier run: recovery always moves it on. With
    /// <paramref name="replacementCompleted"/> the caller has already completed an interrupted replacement of the directory
    /// (<see cref="BranchReplacement.CompleteInterrupted"/>).
    /// </summary>
    internal static StorageEnvironment Open(string directory, StorageOptions? options, Func<JournalContext, IEnvironmentJournal>? journalFactory,
        bool replacementCompleted = false)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        options ??= StorageOptions.Default;
        options.Validate();
        directory = Path.GetFullPath(directory);
        var faults = options.FaultInjector;
        // A replacement of this directory (or by it) that a crash interrupted is finished first.
        if (!replacementCompleted) BranchReplacement.CompleteInterrupted(directory, faults);
        EnsureDirectory(directory, options);
        var io = PlatformIo.Resolve(options.IoBackend, options.LowPriorityFlush);
        var lockHandle = TakeLock(directory);
        DataFile? dataFile = null;
        StorageEnvironment? env = null;
        try
        {
            var dataPath = Path.Combine(directory, DataFile.FileName);
            var journalDirectory = Path.Combine(directory, StorageEnvironmentNames.JournalDirectory);
            if (Directory.Exists(dataPath)) throw NotAnEnvironment($"'{dataPath}' is a directory, where the environment's data file belongs.", dataPath);
            if (File.Exists(journalDirectory)) throw NotAnEnvironment($"'{journalDirectory}' is a file, where the environment's journal folder belongs.", journalDirectory);
            if (!File.Exists(dataPath)) CreateOrFinish(directory, dataPath, journalDirectory, io, options);
            dataFile = DataFile.Open(dataPath, io, faults, options.RandomAccessMap);
            var header = ReadBestHeader(dataFile, out var invalidSlot);
            using var recovery = new JournalRecovery(dataFile, header);
            var plan = Replay(recovery, dataFile, journalDirectory, header, invalidSlot, options, mayContinue: journalFactory is null);
            var recovered = header;
            recovered.LastSyncedTransactionId = recovery.LastTransactionId;
            recovered.NextPageNumber = recovery.NextPageNumber;
            recovered.RootTree = recovery.RootTree;
            if (!plan.ContinueInPlace) recovered.Sequence++;
            var nextJournal = Math.Max(header.JournalFileNumber, plan.Files.Count == 0 ? 0 : plan.Files[^1].Number) + 1;
            IEnvironmentJournal journal = journalFactory is null
                ? new JournalWriter(journalDirectory, header.EnvironmentId, nextJournal, options.MinJournalFileSizeBytes, options.MaxJournalFileSizeBytes, io, faults, options.JournalWriteMethod)
                : journalFactory(new JournalContext(journalDirectory, header.EnvironmentId, nextJournal, io, options));
            try
            {
                env = new StorageEnvironment(directory, options, lockHandle, dataFile, recovered, journal);
            }
            catch
            {
                journal.Dispose();
                throw;
            }
            // The recovered state must stand up (bitmaps valid, roots in use) before its header is written and the old
            // journal files go: until then a failed open leaves everything as it was (the pages recovery wrote are the
            // ones the next replay writes again).
            env.LoadFreeSpace();
            env.VerifyRootsInUse();
            env.Recovery = CommitRecovery(plan, ref recovered, dataFile, journal, journalDirectory, faults);
            env.Start();
            return env;
        }
        catch
        {
            if (env is not null)
            {
                env.SimulateCrash();
            }
            else
            {
                dataFile?.Dispose();
                lockHandle.Dispose();
            }
            throw;
        }
    }

    private static StorageException NotAnEnvironment(string message, string path) =>
        new(StorageErrorCode.NotAnEnvironment, message + " Nothing was changed.", path, 0);

    /// <summary>The environment's directory must be a directory; it is created (durably) when missing and the options allow.</summary>
    private static void EnsureDirectory(string directory, StorageOptions options)
    {
        if (File.Exists(directory)) throw NotAnEnvironment($"'{directory}' is a file, not an environment directory.", directory);
        if (Directory.Exists(directory)) return;
        if (!options.CreateIfMissing) throw new StorageException(StorageErrorCode.IoFailure, $"The environment directory '{directory}' does not exist.", directory, 2);
        try
        {
            FileIo.CreateDirectory(directory);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw FileIo.Translate(e, "create", directory);
        }
        options.FaultInjector?.AfterCreateDirectory(directory);
        SyncParent(directory, options.FaultInjector);
    }

    /// <summary>
    /// No data file: a new environment, or the end of a creation a crash interrupted. Journal files without a data
    /// file are damage (the data file was lost): they are left as they are and the open fails.
    /// </summary>
    private static void CreateOrFinish(string directory, string dataPath, string journalDirectory, PlatformIo io, StorageOptions options)
    {
        var journals = JournalEntryReader.ListFiles(journalDirectory);
        if (journals.Count > 0)
        {
            if (EnvironmentCreator.TryFinishInterrupted(directory, options.FaultInjector)) return;
            throw new StorageCorruptedException(
                $"The environment '{directory}' has {journals.Count} journal file(s) but no data file: the data file was lost. The journal files are left as they are.",
                dataPath);
        }
        if (!options.CreateIfMissing) throw new StorageException(StorageErrorCode.IoFailure, $"There is no environment in '{directory}'.", dataPath, 2);
        EnvironmentCreator.Create(directory, io, options.MinJournalFileSizeBytes, options.FaultInjector);
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
        if (Directory.Exists(path)) throw NotAnEnvironment($"'{path}' is a directory, where the environment's lock file belongs.", path);
        try
        {
            // FileShare.None is an exclusive flock on Unix and a share-mode lock on Windows, in and across processes.
            return FileIo.OpenHandle(path, FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.None);
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

    /// <summary>The valid header slot with the higher sequence; <paramref name="invalidSlot"/> describes the other one when it is invalid.</summary>
    private static FileHeader ReadBestHeader(DataFile dataFile, out string? invalidSlot)
    {
        var first = FileHeaderIo.TryRead(dataFile, 0, out var firstProblem);
        var second = FileHeaderIo.TryRead(dataFile, 1, out var secondProblem);
        FileHeader header;
        invalidSlot = null;
        if (first is null && second is null)
        {
            throw new StorageCorruptedException($"Neither file header is valid (slot 0: {firstProblem}; slot 1: {secondProblem}).", dataFile.Path, 0, 0);
        }
        else if (first is null)
        {
            header = second!.Value;
            invalidSlot = $"slot 0 ({firstProblem})";
        }
        else if (second is null)
        {
            header = first.Value;
            invalidSlot = $"slot 1 ({secondProblem})";
        }
        else
        {
            header = first.Value.Sequence >= second.Value.Sequence ? first.Value : second.Value;
        }

        if (header.FormatVersion != FileHeader.CurrentFormatVersion || header.PageSizeBytes != PageLayout.PageSizeBytes)
        {
            throw new StorageException(StorageErrorCode.FormatMismatch, $"The data file has format {header.FormatVersion} with {header.PageSizeBytes}-byte pages; this library reads format {FileHeader.CurrentFormatVersion} with {PageLayout.PageSizeBytes}-byte pages.");
        }
        var problem = StateChecks.Problem(header);
        if (problem is not null)
        {
            throw new StorageCorruptedException($"The file header (slot {header.Sequence & 1}) describes an impossible environment ({problem}).", dataFile.Path, header.Sequence & 1, (header.Sequence & 1) * PageLayout.PageSizeBytes);
        }
        if (header.NextPageNumber > dataFile.PageCount)
        {
            throw new StorageCorruptedException($"The data file holds {dataFile.PageCount} pages but its header says {header.NextPageNumber} are in use: it was truncated.", dataFile.Path, dataFile.PageCount, dataFile.PageCount * PageLayout.PageSizeBytes);
        }
        return header;
    }

    /// <summary>What replaying the journal found, and what is left to do once the recovered state checks out.</summary>
    private sealed record RecoveryPlan(JournalWalkResult Walk, IReadOnlyList<(long Number, string Path)> Files, bool ContinueInPlace, RecoveryStats Stats);

    /// <summary>
    /// Replays the journal after the header's synced transaction and verifies what it rebuilt; damage fails here (a
    /// strict open) with nothing changed. Unless nothing needed replaying, the rebuilt pages are written and synced.
    /// </summary>
    private static RecoveryPlan Replay(JournalRecovery recovery, DataFile dataFile, string journalDirectory, in FileHeader header, string? invalidSlot, StorageOptions options, bool mayContinue)
    {
        var walk = recovery.Replay(journalDirectory, header);
        var damage = walk.Damage;
        if (damage is not null)
        {
            if (invalidSlot is not null)
            {
                // The slot in use may be the older one, whose journal the newer header let go: the data file may hold
                // what followed, so no journal position from here is safe, whatever the recovery mode.
                var damagedSlot = (header.Sequence & 1) ^ 1;
                throw new StorageCorruptedException(
                    $"File header {invalidSlot} is invalid, so the environment was read from slot {header.Sequence & 1} (synced through transaction {header.LastSyncedTransactionId}), and the journal cannot be followed from there: {damage.Message}",
                    dataFile.Path, damagedSlot, damagedSlot * PageLayout.PageSizeBytes);
            }
            if (options.JournalRecovery == JournalRecoveryMode.Strict)
            {
                throw new StorageCorruptedException(
                    $"{damage.Message} Opening with JournalRecovery = DiscardAfterDamage would keep transactions up to {walk.LastTransactionId} and give up {damage.LostDescription}.",
                    damage.Path, offsetBytes: damage.OffsetBytes);
            }
        }
        recovery.VerifyPages();
        // A shared file of a group is never written again once its writer closed: the journal goes on in a new file of its own.
        var continueInPlace = mayContinue && damage is null && walk.EntriesReplayed == 0 && walk.EndFileNumber == header.JournalFileNumber && !walk.EndsInSharedFile;
        if (!continueInPlace)
        {
            if (!Directory.Exists(journalDirectory)) CreateJournalDirectory(journalDirectory, options.FaultInjector);
            recovery.WritePages();
        }
        var stats = new RecoveryStats
        {
            ReplayedTransactions = walk.EntriesReplayed,
            TornTailDropped = walk.TornTailDropped,
            TornTail = walk.TornTailDropped ? $"{walk.TornTailPath} at offset {walk.TornTailOffsetBytes}: {walk.TornTailReason}" : null,
            InvalidHeaderSlot = invalidSlot,
        };
        return new RecoveryPlan(walk, JournalEntryReader.ListFiles(journalDirectory), continueInPlace, stats);
    }

    /// <summary>
    /// Makes the recovered state the environment's: when nothing needed replaying, the journal continues in the file
    /// the header names; otherwise a new journal file is put in place, and only then a header pointing to it is
    /// written, after which the old files are obsolete and deleted (those provably this environment's own), or moved
    /// aside when they held transactions given up.
    /// </summary>
    private static RecoveryStats CommitRecovery(RecoveryPlan plan, ref FileHeader header, DataFile dataFile, IEnvironmentJournal journal, string journalDirectory, IFaultInjector? faults)
    {
        var walk = plan.Walk;
        var stats = plan.Stats;
        if (plan.ContinueInPlace)
        {
            journal.Continue(walk.EndFileNumber, walk.EndPath!, walk.EndOffsetBytes, header.LastSyncedTransactionId);
            return stats with { ForeignJournalFiles = RemoveObsolete(plan.Files, header.JournalFileNumber, header.EnvironmentId, faults) };
        }
        var files = plan.Files;
        var damage = walk.Damage;
        // The files holding transactions given up get a second name in a lost-* folder (durably) before the header lets
        // the journal go: after a crash between the two the next open would delete them, as files below the header's,
        // and some hold transactions replayed into the data file, so they cannot be moved away before it.
        var aside = damage is null ? null : LinkAside(files, damage.FromFileNumber, journalDirectory, faults);
        journal.StartFile(header.LastSyncedTransactionId + 1);
        (header.JournalFileNumber, header.JournalOffsetBytes) = journal.Position;
        FileHeaderIo.Write(dataFile, header);
        dataFile.Sync();
        if (damage is not null)
        {
            string? lostDirectory;
            if (aside is { } linked)
            {
                foreach (var (_, path) in linked.Files) JournalFiles.Delete(path, faults);
                lostDirectory = linked.Directory;
            }
            else
            {
                // No hard links here: moved, with the window above open.
                lostDirectory = MoveAside(files, damage.FromFileNumber, header.JournalFileNumber, journalDirectory, faults);
            }
            stats = stats with
            {
                LostTransactions = damage.Lost.Count,
                Damage = $"{damage.Message} ({damage.Path}, offset {damage.OffsetBytes}); given up: {damage.LostDescription}.",
                LostJournalsDirectory = lostDirectory,
            };
            files = JournalEntryReader.ListFiles(journalDirectory);
        }
        return stats with { ForeignJournalFiles = RemoveObsolete(files, header.JournalFileNumber, header.EnvironmentId, faults) };
    }

    private static void CreateJournalDirectory(string journalDirectory, IFaultInjector? faults)
    {
        try
        {
            FileIo.CreateDirectory(journalDirectory);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw FileIo.Translate(e, "create", journalDirectory);
        }
        faults?.AfterCreateDirectory(journalDirectory);
        SyncParent(journalDirectory, faults);
    }

    /// <summary>
    /// Deletes the journal files before <paramref name="firstNeededNumber"/> that are this environment's own (their
    /// entries are all in the synced data file); returns how many it left because it cannot prove they are.
    /// </summary>
    private static int RemoveObsolete(IReadOnlyList<(long Number, string Path)> files, long firstNeededNumber, ulong environmentId, IFaultInjector? faults)
    {
        var left = 0;
        foreach (var (number, path) in files)
        {
            if (number >= firstNeededNumber) continue;
            if (JournalFiles.Ownership(path, environmentId) is JournalFileOwnership.Own or JournalFileOwnership.SharedLink) JournalFiles.Delete(path, faults);
            else left++;
        }
        return left;
    }

    /// <summary>
    /// Gives the journal files from the damaged one on (those that hold given-up transactions) a second name in a new lost-*
    /// folder, durably; null, with nothing left behind, where hard links cannot be made (the caller then moves them).
    /// </summary>
    private static (string Directory, List<(long Number, string Path)> Files)? LinkAside(IReadOnlyList<(long Number, string Path)> files, long fromNumber,
        string journalDirectory, IFaultInjector? faults)
    {
        var linking = files.Where(f => f.Number >= fromNumber).ToList();
        if (linking.Count == 0) return null;
        var lost = CreateLostDirectory(journalDirectory, faults);
        if (!JournalLinks.TryLinkAll(linking.Select(f => f.Path), lost))
        {
            try
            {
                Directory.Delete(lost);
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                // An empty folder left: the next open that gives journals up makes another.
            }
            return null;
        }
        FileIo.SyncDirectory(lost, faults);
        FileIo.SyncDirectory(journalDirectory, faults);
        return (lost, linking);
    }

    /// <summary>Moves the journal files from the damaged one on (those that held given-up transactions) into a new lost-* folder.</summary>
    private static string? MoveAside(IReadOnlyList<(long Number, string Path)> files, long fromNumber, long newFileNumber, string journalDirectory, IFaultInjector? faults)
    {
        var moving = files.Where(f => f.Number >= fromNumber && f.Number < newFileNumber).ToList();
        if (moving.Count == 0) return null;
        var lost = CreateLostDirectory(journalDirectory, faults);
        try
        {
            foreach (var (_, path) in moving)
            {
                FileIo.Move(path, Path.Combine(lost, Path.GetFileName(path)));
                faults?.AfterRename(path, Path.Combine(lost, Path.GetFileName(path)));
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw FileIo.Translate(e, "move aside", lost);
        }
        FileIo.SyncDirectory(lost, faults);
        FileIo.SyncDirectory(journalDirectory, faults);
        return lost;
    }

    /// <summary>A new lost-* folder in the journal folder, named by the time (made durable with the files put in it).</summary>
    private static string CreateLostDirectory(string journalDirectory, IFaultInjector? faults)
    {
        var named = Path.Combine(journalDirectory, "lost-" + DateTime.UtcNow.ToString("yyyyMMdd'T'HHmmss'Z'", System.Globalization.CultureInfo.InvariantCulture));
        var lost = named;
        // An earlier open that stopped part-way may have made one this second.
        for (var n = 2; Path.Exists(lost); n++) lost = $"{named}-{n}";
        try
        {
            FileIo.CreateDirectory(lost);
            faults?.AfterCreateDirectory(lost);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw FileIo.Translate(e, "create", lost);
        }
        return lost;
    }

    /// <summary>The newest state a commit appended (the next write transaction's snapshot); read under the write lock.</summary>
    internal EnvironmentState WriterState => _writerState;

    /// <summary>Takes the write lock if it comes free within <paramref name="waitMs"/>; the caller releases it with <see cref="ReleaseWriteLock"/>.</summary>
    internal bool TryEnterWriteLock(int waitMs) => _writeLock.Wait(waitMs);

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
                DataFile.Validate(pointer, page, mapping.PageCount, state.TransactionId);
                if (((PageHeader*)pointer)->Flags != PageFlags.FreeSpaceBitmap) throw new StorageCorruptedException("A free-space bitmap page is not a bitmap page.", DataFile.Path, page, page * PageLayout.PageSizeBytes);
                return (IntPtr)pointer;
            }, state.NextPageNumber, DataFile.MarkHoleWord);
            // The pages past the last in use may have been punched out before a crash (or a close's cut to whole mebibytes)
            // left them in the file: their blocks are reserved again now, in one call, or (on a full disk) by the commit
            // that takes each into use.
            var tail = mapping.PageCount - state.NextPageNumber;
            if (tail > 0)
            {
                try
                {
                    DataFile.RefillHoles(state.NextPageNumber, tail);
                }
                catch (StorageException)
                {
                    DataFile.MarkHoles(state.NextPageNumber, tail);
                }
            }
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
            var beganAt = TransactionOrigin.Capture(Options);
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
        var beganAt = TransactionOrigin.Capture(Options);
        var waitStarted = Diagnostics.CommitProfile.Now();
        if (!_writeLock.Wait(timeout ?? Options.WriteTransactionTimeout)) ThrowWriteTimeout();
        return StartWrite(beganAt, waitStarted);
    }

    /// <summary>Says how long the running write transaction has been open and, when stacks are tracked, where it was begun.</summary>
    private void ThrowWriteTimeout()
    {
        var began = Volatile.Read(ref _writerBeganTimestamp);
        var beganAt = Volatile.Read(ref _writerBeganAt);
        var age = began == 0 ? "" : $" (open for {Stopwatch.GetElapsedTime(began).TotalSeconds:N1} s)";
        throw new StorageException(StorageErrorCode.WriteTransactionTimeout, $"Another write transaction is still running{age}.{TransactionOrigin.Describe(beganAt)}");
    }

    /// <summary>Begins the write transaction, waiting asynchronously for the current one to end.</summary>
    public async ValueTask<WriteTransaction> BeginWriteAsync(CancellationToken cancellationToken = default)
    {
        EnsureWritable();
        var beganAt = TransactionOrigin.Capture(Options);
        var waitStarted = Diagnostics.CommitProfile.Now();
        await _writeLock.WaitAsync(cancellationToken).ConfigureAwait(false);
        return StartWrite(beganAt, waitStarted);
    }

    private WriteTransaction StartWrite(StackTrace? beganAt, long waitStarted)
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
        Diagnostics.CommitProfile.Add(ref Profile.WriteLockWaitTicks, waitStarted, began);
        Volatile.Write(ref _writerBeganAt, beganAt);
        Volatile.Write(ref _writerBeganTimestamp, began);
        var slot = Readers.Register(ref _writerState, out var state, ReaderTable.SlotKind.Writer, began, beganAt);
        Debug.Assert(_dirtyPages.Count == 0, "the previous write transaction left no dirty pages");
        WriterLines.Reset();
        return new WriteTransaction(this, new PageTransaction(this, slot, state, _dirtyPages), began, beganAt);
    }

    internal void ReleaseTransaction(Transaction transaction)
    {
        if (transaction.IsWritable) ReleaseWriteLock();
        ReleaseLifetimeReference();
    }

    /// <summary>The write transaction ended or appended its commit: the next one may begin.</summary>
    internal void ReleaseWriteLock()
    {
        Volatile.Write(ref _writerBeganTimestamp, 0);
        Volatile.Write(ref _writerBeganAt, null);
        _writeLock.Release();
    }

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

    private void EnsureOpen()
    {
        if (_disposed) throw new StorageException(StorageErrorCode.EnvironmentClosed, $"The environment '{DirectoryPath}' was disposed.");
    }

    private void EnsureWritable()
    {
        EnsureOpen();
        ThrowIfPoisoned();
    }

    internal bool IsPoisoned => _poison is not null;

    internal void ThrowIfPoisoned()
    {
        var poison = _poison;
        if (poison is not null)
        {
            throw new StorageException(StorageErrorCode.EnvironmentPoisoned, $"The environment stopped accepting writes after a failure ({poison.Message}); reopen it to recover from the journal.", poison);
        }
    }

    /// <summary>Stops writes after a failure that only the journal can repair (a failed fsync or journal write).</summary>
    internal void Poison(Exception cause) => Interlocked.CompareExchange(ref _poison, cause, null);

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
            WritePendingCommits();
            _flusher.FlushAndSync(forceSync: true, forceSweep: true, throwIfFull: true);
        }
        catch (StorageFullException) when (!IsPoisoned)
        {
            // Writing pages met a full disk: nothing was lost, commits go on, and a later flush writes them.
            throw;
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
            FlushesDeferredForSpace = _flusher.FlushesDeferredForSpace,
            SpaceGivenBackBytes = DataFile.PunchedBytes + _flusher.Space.CutBytes,
            Syncs = _flusher.Syncs,
            LastSyncedTransactionId = _flusher.SyncedUpTo,
            LastDurableTransactionId = Journal.DurableTransactionId,
            RecoveredTransactions = Recovery.ReplayedTransactions,
            Recovery = Recovery,
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
            JournalWriteMethod = Journal.WritePolicy.Snapshot(),
            JournalShared = Journal.IsShared,
            CommitPhases = Profile.Snapshot(),
            CommitLatency = Profile.CommitLatency.Summarize(),
            JournalWriteLatency = Profile.JournalWriteLatency.Summarize(),
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
        _diffHelper.Dispose();
        WriterLines.Dispose();
        // Only now may another instance open the directory: until here a transaction of this one could still
        // read the data file, and a new instance's recovery would change pages under its snapshot.
        _lockHandle.Dispose();
    }
}
