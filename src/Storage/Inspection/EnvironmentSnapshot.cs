using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;
using Storage.Journal;
using Storage.Paging;
using Storage.Recovery;
using Storage.State;
using Storage.Trees;

namespace Storage.Inspection;

/// <summary>
/// A read-only, offline view of the last committed state of an environment on disk, built without the environment's
/// lock: the better valid header slot of the data file, with the journal entries after its last synced transaction
/// applied in memory (the same rules as recovery, but nothing is written). It reads a directory no process has open,
/// or one another process has open; what that process writes meanwhile may or may not be seen.
/// </summary>
/// <remarks>
/// <para>Pages are read with positional reads (never through a mapping), and every page number is checked against the
/// file's length first, so a damaged or truncated file gives problems and exceptions, never faults. Pages the journal
/// changed are rebuilt in memory, as recovery does, and verified against the checksums their transactions stamped; a
/// mismatch is one of <see cref="Problems"/>.</para>
/// <para>What it offers: the header slots and the state recovered from the journal, pages as raw bytes or decoded
/// (<see cref="DescribePage"/>), the trees and their entries in key order, the journal files, and the full consistency
/// check (<see cref="Check(bool, IProgress{CheckProgress})"/>). To check an environment this process has open, use
/// <see cref="StorageEnvironment.Check"/>, which reads through a read transaction instead.</para>
/// </remarks>
public sealed partial class EnvironmentSnapshot : IDisposable, ICheckSource
{
    private readonly SafeFileHandle _handle;
    private readonly List<CheckProblem> _problems = [];
    private ReplayedPages? _replayed;

    private EnvironmentSnapshot(string directory, string dataPath, SafeFileHandle handle)
    {
        DirectoryPath = directory;
        DataPath = dataPath;
        _handle = handle;
        FileLengthBytes = RandomAccess.GetLength(handle);
        JournalDirectory = System.IO.Path.Combine(directory, StorageEnvironmentNames.JournalDirectory);
    }

    /// <summary>The environment's directory (a full path).</summary>
    public string DirectoryPath { get; }

    /// <summary>The data file.</summary>
    public string DataPath { get; }

    /// <summary>The environment's journal folder.</summary>
    public string JournalDirectory { get; }

    /// <summary>
    /// Whether another process had the environment open (held its lock) when the snapshot was taken: what it writes
    /// meanwhile may show as a half-written last journal entry, which is then a note, not a warning.
    /// </summary>
    public bool OpenElsewhere { get; private init; }

    /// <summary>The data file's length when the snapshot was opened.</summary>
    public long FileLengthBytes { get; }

    /// <summary>Whole pages in the data file.</summary>
    public long FilePageCount => FileLengthBytes / PageLayout.PageSizeBytes;

    /// <summary>Both header slots, in slot order.</summary>
    public IReadOnlyList<HeaderSlot> Slots { get; private set; } = [];

    /// <summary>The slot the state was built from: the valid one with the higher sequence.</summary>
    public int ChosenSlot { get; private set; }

    /// <summary>The header the state was built from.</summary>
    public DataFileHeader Header { get; private set; }

    /// <summary>The last committed transaction (the synced one, then the journal's).</summary>
    public long TransactionId { get; private set; }

    /// <summary>Pages at or past this number were never allocated in the state.</summary>
    public long NextPageNumber { get; private set; }

    /// <summary>The tree of tree names of the state.</summary>
    internal TreeHeader RootTree { get; private set; }

    /// <summary>Journal entries applied after the header's last synced transaction.</summary>
    public int JournalEntriesApplied { get; private set; }

    /// <summary>Pages (and overflow runs) whose current version came from the journal (not yet in the data file).</summary>
    public int JournalPageCount => _replayed?.ImageCount ?? 0;

    /// <summary>One past the highest page the journal rebuilt (0 when it rebuilt none).</summary>
    internal long JournalPagesEnd => _replayed?.PagesEnd ?? 0;

    /// <summary>What the walk of the journal found: where it ended, a dropped torn entry, damage and what it cuts off; null when the journal could not be listed or read at all (see <see cref="Problems"/>).</summary>
    public JournalWalkSummary? JournalWalk { get; private set; }

    /// <summary>What was found while building the snapshot (header slots, journal, file length); <see cref="Check(bool, IProgress{CheckProgress})"/> reports them too.</summary>
    public IReadOnlyList<CheckProblem> Problems => _problems;

    /// <summary>
    /// Opens the environment in <paramref name="directory"/> read-only and builds its last committed state. Takes no lock
    /// and writes nothing.
    /// </summary>
    /// <exception cref="InspectionException">There is nothing to inspect: no directory, no data file, no valid header, or a format this library does not read.</exception>
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
        var snapshot = new EnvironmentSnapshot(directory, dataPath, handle) { OpenElsewhere = IsLocked(directory) };
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

    /// <summary>
    /// Opens <paramref name="directory"/> read-only (as <see cref="Open"/> does) and checks its last committed state. An
    /// environment that cannot be opened at all is a report with one <c>open</c> error.
    /// </summary>
    /// <remarks>
    /// <para>A directory another process has open (<see cref="IsLocked"/>) changes while it is read: its journal's last
    /// entry may be half written, a journal file may be retired between listing and reading it, and its flusher writes
    /// pages (and free-space bitmaps) of transactions newer than the snapshot. Read from files alone, such a moment can
    /// look like damage. So there a finding counts only when it is confirmed: the directory is checked again from a new
    /// snapshot (after a pause of a few tens of milliseconds), up to <see cref="MaxLiveAttempts"/> times in all, and an error is reported only once
    /// <see cref="LiveConfirmations"/> checks in a row found it, unchanged, in the same place; real damage stays where
    /// it is, a write in flight does not. A clean check ends the loop at once. Findings that did not hold are listed as
    /// <c>in-flight</c> notes; when no check came out clean and nothing was confirmed, the report has no error and one
    /// <c>unsettled</c> warning. <see cref="CheckReport.Attempts"/> and <see cref="CheckReport.WhileOpenElsewhere"/> say
    /// what happened. If the process closes the environment meanwhile, the next check is of a settled state and is
    /// final. To check an environment this process has open, <see cref="StorageEnvironment.Check"/> reads one committed
    /// snapshot through a read transaction and needs none of this.</para>
    /// </remarks>
    /// <param name="directory">The environment's directory.</param>
    /// <param name="collectPages">Whether to fill <see cref="CheckReport.Pages"/> (one entry per page).</param>
    /// <param name="progress">Told now and then how far the check is.</param>
    public static CheckReport Check(string directory, bool collectPages = false, IProgress<CheckProgress>? progress = null)
    {
        var report = CheckOnce(directory, collectPages, progress);
        if (!report.WhileOpenElsewhere) return report;
        // Open in another process: confirm every error by checking again.
        var runs = new Dictionary<CheckProblem, int>();
        CountRuns(runs, report);
        var attempts = 1;
        while (report.ErrorCount > 0 && attempts < MaxLiveAttempts && !runs.Values.Any(r => r >= LiveConfirmations))
        {
            // A short pause of random length, so that the checks do not keep meeting the writer's flushes in step.
            Thread.Sleep(Random.Shared.Next(5, 60));
            report = CheckOnce(directory, collectPages, progress);
            attempts++;
            if (!report.WhileOpenElsewhere)
            {
                // Closed meanwhile: this check read a settled state, and it is final.
                report.Attempts = attempts;
                return report;
            }
            CountRuns(runs, report);
        }
        report.Attempts = attempts;
        if (report.ErrorCount == 0)
        {
            if (attempts > 1)
            {
                report.Add(new CheckProblem(ProblemSeverity.Info, "in-flight",
                    $"{attempts - 1} earlier check{(attempts == 2 ? "" : "s")} of this directory, open in another process, read it while writes were in flight; check {attempts} found it consistent"));
            }
            return report;
        }
        var confirmed = runs.Where(r => r.Value >= LiveConfirmations).Select(r => r.Key).ToHashSet();
        report.KeepConfirmedErrors(confirmed.Contains);
        if (confirmed.Count == 0)
        {
            report.Add(new CheckProblem(ProblemSeverity.Warning, "unsettled",
                $"the directory is open in another process and changed under each of {attempts} checks; no finding was seen twice in a row in the same place, " +
                "so none is reported as damage. Check again when it is quieter, or call StorageEnvironment.Check in the process that has it open."));
        }
        return report;
    }

    /// <summary>How many times, at most, a directory another process has open is checked for one report (see <see cref="Check(string, bool, IProgress{CheckProgress})"/>).</summary>
    public const int MaxLiveAttempts = 12;

    /// <summary>How many checks in a row must find an error, unchanged and in the same place, in a directory another process has open before it is reported.</summary>
    public const int LiveConfirmations = 3;

    private static CheckReport CheckOnce(string directory, bool collectPages, IProgress<CheckProgress>? progress)
    {
        EnvironmentSnapshot snapshot;
        try
        {
            snapshot = Open(directory);
        }
        catch (InspectionException e)
        {
            var failed = CheckReport.NotOpened(e.Message);
            failed.WhileOpenElsewhere = Directory.Exists(directory) && IsLocked(directory);
            return failed;
        }
        using (snapshot)
        {
            var report = snapshot.Check(collectPages, progress);
            // Judged after the check: a process that closed the environment before it ended may have changed it meanwhile.
            report.WhileOpenElsewhere = snapshot.OpenElsewhere || IsLocked(directory);
            return report;
        }
    }

    /// <summary>Counts, for each error, how many checks in a row found it; an error the latest check did not find starts again at zero.</summary>
    private static void CountRuns(Dictionary<CheckProblem, int> runs, CheckReport report)
    {
        var found = report.Problems.Where(p => p.Severity == ProblemSeverity.Error).ToHashSet();
        foreach (var gone in runs.Keys.Where(k => !found.Contains(k)).ToList()) runs.Remove(gone);
        foreach (var problem in found) runs[problem] = runs.GetValueOrDefault(problem) + 1;
    }

    /// <summary>
    /// The full consistency check of the snapshot's state (see <see cref="CheckReport"/>): every page accounted for,
    /// every tree walked, every checksum verified, the free-space bitmaps and holes compared with the pages in use. The
    /// snapshot's own <see cref="Problems"/> come first in the report.
    /// </summary>
    /// <param name="collectPages">Whether to fill <see cref="CheckReport.Pages"/> (one entry per page).</param>
    /// <param name="progress">Told now and then how far the check is.</param>
    public CheckReport Check(bool collectPages = false, IProgress<CheckProgress>? progress = null) =>
        EnvironmentChecker.Check(this, collectPages, progress);

    /// <summary>
    /// Whether a process has the environment in <paramref name="directory"/> open: it holds the lock file. Probes with a
    /// shared lock, which fails only while someone holds the exclusive one; the probe is released at once.
    /// </summary>
    public static bool IsLocked(string directory)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        var lockPath = System.IO.Path.Combine(directory, StorageEnvironmentNames.LockFile);
        if (!File.Exists(lockPath)) return false;
        try
        {
            using var probe = File.OpenHandle(lockPath, FileMode.Open, FileAccess.Read, FileShare.ReadWrite);
            return false;
        }
        catch (IOException)
        {
            return true;
        }
        catch (UnauthorizedAccessException)
        {
            return false;
        }
    }

    /// <summary>Reads both header slots of a data file without building a snapshot.</summary>
    internal static IReadOnlyList<HeaderSlot> ReadSlots(SafeFileHandle handle) => ReadSlots(handle, out _);

    private static HeaderSlot[] ReadSlots(SafeFileHandle handle, out FileHeader?[] headers)
    {
        var page = new byte[PageLayout.PageSizeBytes];
        var slots = new HeaderSlot[2];
        headers = new FileHeader?[2];
        for (var slot = 0; slot < 2; slot++)
        {
            Array.Clear(page);
            var read = Platform.FileIo.Read(handle, "data file", page, slot * (long)PageLayout.PageSizeBytes);
            var header = headers[slot] = FileHeaderIo.TryParse(page.AsSpan(0, read), slot, out var problem);
            slots[slot] = new HeaderSlot(slot, header is { } valid ? DataFileHeader.From(valid) : null, problem);
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
        Slots = ReadSlots(_handle, out var headers);
        var first = headers[0];
        var second = headers[1];
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
        var header = headers[ChosenSlot]!.Value;
        Header = DataFileHeader.From(header);
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
        _problems.Add(new CheckProblem(severity, kind, message, file, page, null, offset));

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
        JournalWalkResult walk;
        try
        {
            walk = JournalReplay.Walk(files, JournalDirectory, header, Apply);
            JournalWalk = JournalWalkSummary.From(walk);
        }
        catch (StorageException e)
        {
            Report(ProblemSeverity.Error, "journal", e.Message, e.Path, -1, (e as StorageCorruptedException)?.OffsetBytes ?? -1);
            return;
        }
        if (walk.Damage is { } damage)
        {
            Report(ProblemSeverity.Error, "journal",
                $"{damage.Message} A strict open fails; an open with JournalRecovery = DiscardAfterDamage keeps transactions up to {walk.LastTransactionId} and gives up {damage.LostDescription}.",
                damage.Path, -1, damage.OffsetBytes);
        }
        if (walk.TornTailDropped && OpenElsewhere)
        {
            Report(ProblemSeverity.Info, "in-flight",
                $"the entry after transaction {walk.LastTransactionId} is not whole yet ({walk.TornTailReason}): the process that has the environment open is writing it",
                walk.TornTailPath, -1, walk.TornTailOffsetBytes);
        }
        else if (walk.TornTailDropped)
        {
            Report(ProblemSeverity.Warning, "torn-tail",
                $"{walk.TornTailReason} follows transaction {walk.LastTransactionId} and is dropped (a write that never completed, or damage to the last entry)",
                walk.TornTailPath, -1, walk.TornTailOffsetBytes);
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

    /// <summary>Closes the data file and frees the pages rebuilt from the journal.</summary>
    public void Dispose()
    {
        _replayed?.Dispose();
        _handle.Dispose();
    }
}
