using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;
using Storage.Allocation;
using Storage.Journal;
using Storage.Paging;
using Storage.Recovery;
using Storage.State;
using Storage.Trees;

namespace Storage.Inspection;

/// <summary>What one of the two header slots holds.</summary>
internal sealed record HeaderSlot(int Slot, FileHeader? Header, string? Problem)
{
    public bool IsValid => Header is not null;
}

/// <summary>
/// A read-only view of the last committed state of an environment, built without the environment's lock:
/// the better valid header slot of the data file, with the journal entries after its last synced transaction
/// applied in memory (the same replay rules as <see cref="Recovery"/>, but nothing is written). Works on a
/// directory another process has open; what that process writes meanwhile may or may not be seen.
/// </summary>
/// <remarks>
/// Pages are read through <see cref="RandomAccess"/> (never a mapping), and every page number is checked
/// against the file length first, so a damaged or truncated file gives problems, not faults. Pages the
/// journal changed are rebuilt in memory (<see cref="ReplayedPages"/>, as recovery does) and verified against
/// the checksums their transactions stamped; a mismatch is a problem of the snapshot.
/// </remarks>
internal sealed class EnvironmentSnapshot : IDisposable
{
    private readonly SafeFileHandle _handle;
    private readonly List<InspectionProblem> _problems = [];
    private ReplayedPages? _replayed;

    private EnvironmentSnapshot(string directory, string dataPath, SafeFileHandle handle)
    {
        DirectoryPath = directory;
        DataPath = dataPath;
        _handle = handle;
        FileLengthBytes = RandomAccess.GetLength(handle);
        JournalDirectory = System.IO.Path.Combine(directory, StorageEnvironmentNames.JournalDirectory);
    }

    public string DirectoryPath { get; }

    public string DataPath { get; }

    public string JournalDirectory { get; }

    public long FileLengthBytes { get; }

    /// <summary>Whole pages in the data file.</summary>
    public long FilePageCount => FileLengthBytes / PageLayout.PageSizeBytes;

    public IReadOnlyList<HeaderSlot> Slots { get; private set; } = [];

    /// <summary>The slot the state was built from.</summary>
    public int ChosenSlot { get; private set; }

    /// <summary>The header the state was built from.</summary>
    public FileHeader Header { get; private set; }

    /// <summary>The last committed transaction (after the journal).</summary>
    public long TransactionId { get; private set; }

    public long NextPageNumber { get; private set; }

    /// <summary>The root tree (tree names) of the last committed state.</summary>
    public TreeHeader RootTree { get; private set; }

    public int JournalEntriesApplied { get; private set; }

    /// <summary>Pages (and overflow runs) whose current version came from the journal (not yet in the data file).</summary>
    public int JournalPageCount => _replayed?.ImageCount ?? 0;

    /// <summary>One past the highest page the journal rebuilt (0 when it rebuilt none).</summary>
    public long JournalPagesEnd => _replayed?.PagesEnd ?? 0;

    /// <summary>What the journal walk found: where it ended, a dropped torn entry, damage and what it cuts off.</summary>
    public JournalWalkResult? JournalWalk { get; private set; }

    /// <summary>What was found while building the snapshot (header slots, journal, file length).</summary>
    public IReadOnlyList<InspectionProblem> Problems => _problems;

    /// <summary>
    /// Opens the environment in <paramref name="directory"/> read-only. Throws <see cref="InspectionException"/>
    /// (one line) when there is nothing to inspect: no directory, no data file, or no valid header.
    /// </summary>
    public static EnvironmentSnapshot Open(string directory)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        directory = System.IO.Path.GetFullPath(directory);
        if (!Directory.Exists(directory))
        {
            var intent = Storage.Groups.BranchReplacement.IntentPath(directory);
            throw new InspectionException(File.Exists(intent)
                ? $"no environment directory at {directory}: its replacement was interrupted after it was moved aside ({intent}); opening it with the engine completes the replacement"
                : $"no environment directory at {directory}");
        }
        var dataPath = System.IO.Path.Combine(directory, DataFile.FileName);
        if (!File.Exists(dataPath)) throw new InspectionException($"no data file at {dataPath}");
        SafeFileHandle handle;
        try
        {
            handle = File.OpenHandle(dataPath, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw new InspectionException($"cannot open {dataPath}: {e.Message}", e);
        }
        var snapshot = new EnvironmentSnapshot(directory, dataPath, handle);
        try
        {
            snapshot.Load();
            return snapshot;
        }
        catch
        {
            snapshot.Dispose();
            throw;
        }
    }

    /// <summary>Reads both header slots of a data file without building a snapshot.</summary>
    public static IReadOnlyList<HeaderSlot> ReadSlots(SafeFileHandle handle)
    {
        var page = new byte[PageLayout.PageSizeBytes];
        var slots = new HeaderSlot[2];
        for (var slot = 0; slot < 2; slot++)
        {
            Array.Clear(page);
            var read = Platform.FileIo.Read(handle, "data file", page, slot * (long)PageLayout.PageSizeBytes);
            var header = FileHeaderIo.TryParse(page.AsSpan(0, read), slot, out var problem);
            slots[slot] = new HeaderSlot(slot, header, problem);
        }
        return slots;
    }

    private void Load()
    {
        if (FileLengthBytes % PageLayout.PageSizeBytes != 0)
        {
            Report(ProblemSeverity.Error, "file-length", $"the data file is {FileLengthBytes} bytes, not a whole number of {PageLayout.PageSizeBytes}-byte pages",
                DataPath, FilePageCount, FileLengthBytes);
        }
        Slots = ReadSlots(_handle);
        var first = Slots[0].Header;
        var second = Slots[1].Header;
        if (first is null && second is null)
        {
            throw new InspectionException($"neither file header is valid (slot 0: {Slots[0].Problem}; slot 1: {Slots[1].Problem})");
        }
        foreach (var slot in Slots)
        {
            if (!slot.IsValid)
            {
                Report(ProblemSeverity.Warning, "header", $"header slot {slot.Slot} is invalid ({slot.Problem}); the other slot is used",
                    DataPath, slot.Slot, slot.Slot * (long)PageLayout.PageSizeBytes);
            }
        }
        ChosenSlot = first is null ? 1 : second is null ? 0 : first.Value.Sequence >= second.Value.Sequence ? 0 : 1;
        var header = Slots[ChosenSlot].Header!.Value;
        Header = header;
        if (header.FormatVersion != FileHeader.CurrentFormatVersion || header.PageSizeBytes != PageLayout.PageSizeBytes)
        {
            throw new InspectionException($"the data file has format {header.FormatVersion} with {header.PageSizeBytes}-byte pages; this tool reads format {FileHeader.CurrentFormatVersion} with {PageLayout.PageSizeBytes}-byte pages");
        }
        var problem = StateChecks.Problem(header);
        if (problem is not null)
        {
            throw new InspectionException($"header slot {ChosenSlot} describes an impossible environment ({problem})");
        }

        TransactionId = header.LastSyncedTransactionId;
        NextPageNumber = header.NextPageNumber;
        RootTree = header.RootTree;
        ReplayJournal(header);
        if (header.NextPageNumber > FilePageCount)
        {
            Report(ProblemSeverity.Error, "truncated", $"the data file holds {FilePageCount} pages but the synced header says {header.NextPageNumber} are in use: it was truncated",
                DataPath, FilePageCount, FilePageCount * PageLayout.PageSizeBytes);
        }
    }

    private void Report(ProblemSeverity severity, string kind, string message, string? file = null, long page = -1, long offset = -1) =>
        _problems.Add(new InspectionProblem(severity, kind, message, file, page, null, offset));

    /// <summary>Applies the journal after the header's last synced transaction, like recovery, but in memory.</summary>
    private void ReplayJournal(in FileHeader header)
    {
        IReadOnlyList<(long Number, string Path)> files;
        try
        {
            files = JournalEntryReader.ListFiles(JournalDirectory);
        }
        catch (StorageException e)
        {
            Report(ProblemSeverity.Error, "journal", $"cannot list the journal directory: {e.Message}", JournalDirectory);
            return;
        }
        _replayed = new ReplayedPages(_handle, DataPath);
        try
        {
            JournalWalk = JournalReplay.Walk(files, JournalDirectory, header, Apply);
        }
        catch (StorageException e)
        {
            Report(ProblemSeverity.Error, "journal", e.Message, e.Path, -1, (e as StorageCorruptedException)?.OffsetBytes ?? -1);
            return;
        }
        if (JournalWalk.Damage is { } damage)
        {
            Report(ProblemSeverity.Error, "journal",
                $"{damage.Message} A strict open fails; an open with JournalRecovery = DiscardAfterDamage keeps transactions up to {JournalWalk.LastTransactionId} and gives up {damage.LostDescription}.",
                damage.Path, -1, damage.OffsetBytes);
        }
        if (JournalWalk.TornTailDropped)
        {
            Report(ProblemSeverity.Warning, "torn-tail",
                $"{JournalWalk.TornTailReason} follows transaction {JournalWalk.LastTransactionId} and is dropped (a write that never completed, or damage to the last entry)",
                JournalWalk.TornTailPath, -1, JournalWalk.TornTailOffsetBytes);
        }
        var mismatches = new List<StorageCorruptedException>();
        _replayed.Verify(mismatches);
        foreach (var e in mismatches) Report(ProblemSeverity.Error, "replay", StripLocation(e.Message), DataPath, e.PageNumber, e.OffsetBytes);
    }

    private static string StripLocation(string message)
    {
        var at = message.LastIndexOf(" [", StringComparison.Ordinal);
        return at > 0 && message.EndsWith(']') ? message[..at] : message;
    }

    /// <summary>Applies one entry; false (with a problem reported) when its records are impossible.</summary>
    private bool Apply(in JournalEntryHeader entry, ReadOnlySpan<byte> payload, string path, long entryOffset)
    {
        try
        {
            _replayed!.Apply(entry, payload, path, entryOffset, NextPageNumber);
        }
        catch (StorageCorruptedException e)
        {
            Report(ProblemSeverity.Error, "journal",
                $"the entry of transaction {TransactionId + 1} has a valid checksum but is impossible ({StripLocation(e.Message)}); the snapshot stops at transaction {TransactionId}",
                path, e.PageNumber, entryOffset);
            return false;
        }
        TransactionId = entry.TransactionId;
        NextPageNumber = entry.NextPageNumber;
        RootTree = entry.RootTree;
        JournalEntriesApplied++;
        return true;
    }

    /// <summary>The data file, open for reading.</summary>
    public SafeFileHandle DataHandle => _handle;

    /// <summary>Whether the page's current version came from the journal (not yet in the data file).</summary>
    public bool IsFromJournal(long pageNumber) => _replayed?.Contains(pageNumber) == true;

    /// <summary>
    /// Reads page <paramref name="pageNumber"/> as of the snapshot into <paramref name="destination"/> (one page).
    /// False, with the reason, when the page is not in the file.
    /// </summary>
    public unsafe bool TryReadPage(long pageNumber, Span<byte> destination, out string? problem)
    {
        if (destination.Length < PageLayout.PageSizeBytes) throw new ArgumentException("The buffer must hold a page.", nameof(destination));
        if (pageNumber < 0)
        {
            problem = $"page number {pageNumber} is negative";
            return false;
        }
        var image = _replayed is null ? null : _replayed.TryGetPage(pageNumber);
        if (image is not null)
        {
            new ReadOnlySpan<byte>(image, PageLayout.PageSizeBytes).CopyTo(destination);
            problem = null;
            return true;
        }
        if (pageNumber >= FilePageCount)
        {
            if (pageNumber < NextPageNumber && Header.NextPageNumber <= FilePageCount)
            {
                // The file grows when the flusher writes; a page a live writer allocated since is only in the journal.
                destination[..PageLayout.PageSizeBytes].Clear();
                problem = null;
                return true;
            }
            problem = $"page {pageNumber} is past the end of the data file ({FilePageCount} pages)";
            return false;
        }
        try
        {
            var read = Platform.FileIo.Read(_handle, DataPath, destination[..PageLayout.PageSizeBytes], pageNumber * PageLayout.PageSizeBytes);
            if (read < PageLayout.PageSizeBytes)
            {
                problem = $"page {pageNumber} could be read only in part ({read} bytes): the file shrank";
                return false;
            }
        }
        catch (StorageException e)
        {
            problem = $"page {pageNumber} could not be read: {e.Message}";
            return false;
        }
        problem = null;
        return true;
    }

    /// <summary>Reads a page into a new array; throws <see cref="InspectionException"/> when it is not in the file.</summary>
    public byte[] ReadPage(long pageNumber)
    {
        var page = new byte[PageLayout.PageSizeBytes];
        if (!TryReadPage(pageNumber, page, out var problem)) throw new InspectionException(problem!);
        return page;
    }

    public void Dispose()
    {
        _replayed?.Dispose();
        _handle.Dispose();
    }
}
