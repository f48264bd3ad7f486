using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;
using Storage.Allocation;
using Storage.Groups;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
using Storage.State;
using Storage.Trees;

namespace Storage.Recovery;

/// <summary>
/// Opening an environment, as one straight line: finish an interrupted replacement of the directory, take the directory's
/// lock, create the environment (or finish a creation a crash interrupted), choose the header, replay the journal, make the
/// journal, check that the recovered state stands up (free-space bitmaps valid, roots in use), and only then commit the
/// recovery (a header naming the new journal file) and start the background work. Until that commit, a failed open leaves
/// everything as it was: the pages recovery wrote are the ones the next replay writes again.
/// </summary>
internal static class EnvironmentOpener
{
    /// <summary>
    /// Opens with a journal of the caller's making (a member of an environment group with shared journals), or the
    /// environment's own <see cref="JournalWriter"/> when <paramref name="journalFactory"/> is null. A journal that is not
    /// the environment's own never continues in a file of an earlier run: recovery always moves it on. With
    /// <paramref name="replacementCompleted"/> the caller has already completed an interrupted replacement of the directory
    /// (<see cref="BranchReplacement.CompleteInterrupted"/>).
    /// </summary>
    public static StorageEnvironment Open(string directory, StorageOptions? options, Func<JournalContext, IEnvironmentJournal>? journalFactory,
        bool replacementCompleted = false)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        options ??= StorageOptions.Default;
        options.Validate();
        directory = Path.GetFullPath(directory);
        var faults = options.Hooks.FaultInjector;
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
            var header = HeaderSlots.ReadBest(dataFile, out var invalidSlot);
            using var recovery = new JournalRecovery(dataFile, header, journalDirectory, options);
            recovery.Replay(invalidSlot, mayContinue: journalFactory is null);
            var recovered = recovery.RecoveredHeader;
            var journal = journalFactory is null
                ? new JournalWriter(journalDirectory, header.EnvironmentId, recovery.NextJournalNumber, options.MinJournalFileSizeBytes, options.MaxJournalFileSizeBytes, io, faults,
                    options.JournalWriteMethod, options.RetainedJournalBytes)
                : journalFactory(new JournalContext(journalDirectory, header.EnvironmentId, recovery.NextJournalNumber, io, options));
            try
            {
                env = new StorageEnvironment(directory, options, lockHandle, dataFile, recovered, journal);
            }
            catch
            {
                journal.Dispose();
                throw;
            }
            LoadFreeSpace(env);
            VerifyRootsInUse(env);
            env.Start(recovery.Commit(ref recovered, journal));
            OpenInstances.Add(env);
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

    /// <summary>
    /// An entry of a directory without a data file that is not the environment's own (its lock file, its journal folder,
    /// the temporary file of a creation a crash interrupted, a scratch spill file), or null.
    /// </summary>
    private static string? FirstForeignEntry(string directory)
    {
        foreach (var entry in Directory.EnumerateFileSystemEntries(directory))
        {
            var name = Path.GetFileName(entry);
            // The data file's name is the environment's even when something else stands there (the open then says what).
            if (name is StorageEnvironmentNames.LockFile or StorageEnvironmentNames.JournalDirectory or DataFile.FileName or RetainedJournals.DirectoryName) continue;
            if (name == DataFile.FileName + EnvironmentCreator.TemporarySuffix) continue;
            if (Scratch.ScratchFile.IsScratchFileName(name)) continue;
            return entry;
        }
        return null;
    }

    private static StorageException NotAnEnvironment(string message, string path) =>
        new(StorageErrorCode.NotAnEnvironment, message + " Nothing was changed.", path, 0);

    /// <summary>The environment's directory must be a directory; it is created (durably) when missing and the options allow.</summary>
    private static void EnsureDirectory(string directory, StorageOptions options)
    {
        if (File.Exists(directory)) throw NotAnEnvironment($"'{directory}' is a file, not an environment directory.", directory);
        if (Directory.Exists(directory))
        {
            if (!options.CreateInNonEmptyDirectory && !File.Exists(Path.Combine(directory, DataFile.FileName)) && FirstForeignEntry(directory) is { } foreign)
            {
                throw NotAnEnvironment(
                    $"'{directory}' holds no environment but other files ('{Path.GetFileName(foreign)}' among them). Open an empty or missing directory, " +
                    $"or set StorageOptions.{nameof(StorageOptions.CreateInNonEmptyDirectory)} to create the environment beside them.", directory);
            }
            return;
        }
        if (!options.CreateIfMissing) throw new StorageException(StorageErrorCode.IoFailure, $"The environment directory '{directory}' does not exist.", directory, 2);
        FileIo.CreateDirectory(directory, options.Hooks.FaultInjector);
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
            if (EnvironmentCreator.TryFinishInterrupted(directory, options.Hooks.FaultInjector)) return;
            throw new StorageCorruptedException(
                $"The environment '{directory}' has {journals.Count} journal file(s) but no data file: the data file was lost. The journal files are left as they are.",
                dataPath);
        }
        if (!options.CreateIfMissing) throw new StorageException(StorageErrorCode.IoFailure, $"There is no environment in '{directory}'.", dataPath, 2);
        EnvironmentCreator.Create(directory, io, options.MinJournalFileSizeBytes, options.Hooks.FaultInjector);
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
            var holder = OpenInstances.DescribeHolder(directory) ?? "is open in another process";
            throw new StorageException(StorageErrorCode.EnvironmentLocked, $"The environment '{directory}' {holder}.", path, e.HResult & 0xFFFF, e);
        }
        catch (UnauthorizedAccessException e)
        {
            throw FileIo.Translate(e, "open", path);
        }
    }

    /// <summary>
    /// Loads the free-space bitmaps of the recovered state (each checked as it is read). The pages past the last in use may
    /// have been punched out before a crash (or a close's cut to whole mebibytes) left them in the file: their blocks are
    /// reserved again now, in one call, or (on a full disk) by the commit that takes each into use.
    /// </summary>
    private static unsafe void LoadFreeSpace(StorageEnvironment env)
    {
        var state = env.CurrentState;
        var dataFile = env.DataFile;
        var mapping = dataFile.AcquireMapping();
        try
        {
            env.FreeSpace.Load(page =>
            {
                if (page >= mapping.PageCount) throw new StorageCorruptedException("A free-space bitmap page is past the end of the data file.", dataFile.Path, page);
                var pointer = mapping.PagePointer(page);
                dataFile.Validate(pointer, page, mapping.PageCount, state.TransactionId);
                if (((PageHeader*)pointer)->Flags != PageFlags.FreeSpaceBitmap) throw new StorageCorruptedException("A free-space bitmap page is not a bitmap page.", dataFile.Path, page, page * PageLayout.PageSizeBytes);
                return (IntPtr)pointer;
            }, state.NextPageNumber, dataFile.MarkHoleWord);
            var tail = mapping.PageCount - state.NextPageNumber;
            if (tail > 0)
            {
                try
                {
                    dataFile.RefillHoles(state.NextPageNumber, tail);
                }
                catch (StorageException)
                {
                    dataFile.MarkHoles(state.NextPageNumber, tail);
                }
            }
        }
        finally
        {
            mapping.Release();
        }
    }

    /// <summary>
    /// The cheap part of "allocation never hands out a page in use": the root page of the tree of names and the root page
    /// of every tree must be marked in use in the free-space bitmaps. A bitmap that says one of them is free (a bit flipped
    /// with its checksum intact, or a bug) would let the next allocation overwrite it.
    /// </summary>
    private static void VerifyRootsInUse(StorageEnvironment env)
    {
        using var tx = env.BeginRead();
        var pages = tx.Pages;
        CheckInUse(env, pages, tx.RootState.RootPage, "the root page of the tree of names");
        var cursor = tx.RootTree.CreateCursor();
        for (var ok = cursor.SeekFirst(); ok; ok = cursor.MoveNext())
        {
            var value = cursor.Value;
            if (value.Length != TreeHeader.SizeBytes) continue; // the tree's own open reports it
            var header = MemoryMarshal.Read<TreeHeader>(value);
            CheckInUse(env, pages, header.RootPage, $"the root page of tree '{System.Text.Encoding.UTF8.GetString(cursor.Key)}'");
        }
    }

    private static void CheckInUse(StorageEnvironment env, Transactions.PageTransaction pages, long pageNumber, string what)
    {
        if (pageNumber < 2 || pageNumber >= pages.State.NextPageNumber || !FreeSpaceMap.IsMarkedFree(pages, pageNumber)) return;
        var bitmap = FreeSpaceLayout.BitmapPageFor(pageNumber);
        throw new StorageCorruptedException(
            $"The free-space bitmap marks page {pageNumber}, {what}, as free: the next allocation would overwrite it.",
            env.DataFile.Path, bitmap, bitmap * PageLayout.PageSizeBytes + FreeSpaceLayout.BitmapOffsetBytes + FreeSpaceLayout.BitIndex(pageNumber) / 8);
    }
}
