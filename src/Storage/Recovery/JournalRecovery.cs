using Storage.Faults;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
using Storage.State;

namespace Storage.Recovery;

/// <summary>
/// Recovery at open, in two steps. <see cref="Replay"/> rebuilds in memory the pages the journal entries after the header's
/// synced transaction changed, by the rules of <see cref="JournalReplay"/>, judges any damage (a strict open fails there,
/// with nothing changed), verifies every rebuilt page against the checksum its last transaction stamped, and writes them
/// to the data file (synced) unless nothing needed replaying. Once the recovered state checks out, <see cref="Commit"/>
/// makes it the environment's: the journal goes on in a new file, a header naming it is written, and only then are the old
/// journal files obsolete (deleted when provably this environment's own, or put aside when they held transactions given up).
/// </summary>
internal sealed class JournalRecovery : IDisposable
{
    private readonly DataFile _dataFile;
    private readonly string _journalDirectory;
    private readonly StorageOptions _options;
    private readonly ReplayedPages _pages;
    private readonly FileHeader _header;
    private JournalWalkResult? _walk;
    private IReadOnlyList<(long Number, string Path)> _files = [];
    private RecoveryStats _stats;
    private long _lastTransactionId;
    private long _nextPageNumber;
    private Trees.TreeHeader _rootTree;

    public JournalRecovery(DataFile dataFile, in FileHeader header, string journalDirectory, StorageOptions options)
    {
        _dataFile = dataFile;
        _header = header;
        _journalDirectory = journalDirectory;
        _options = options;
        _pages = new ReplayedPages(dataFile.Handle, dataFile.Path);
        _lastTransactionId = header.LastSyncedTransactionId;
        _nextPageNumber = header.NextPageNumber;
        _rootTree = header.RootTree;
    }

    /// <summary>Whether the journal goes on in the file the header names, after its last entry: nothing needed replaying (set by <see cref="Replay"/>).</summary>
    public bool ContinuesInPlace { get; private set; }

    /// <summary>
    /// The header of the recovered state: the last transaction replayed, its root and next page; a new sequence unless the
    /// journal continues in place (set by <see cref="Replay"/>). Its journal position is set by <see cref="Commit"/>.
    /// </summary>
    public FileHeader RecoveredHeader
    {
        get
        {
            var recovered = _header;
            recovered.LastSyncedTransactionId = _lastTransactionId;
            recovered.NextPageNumber = _nextPageNumber;
            recovered.RootTree = _rootTree;
            if (!ContinuesInPlace) recovered.Sequence++;
            return recovered;
        }
    }

    /// <summary>The number a new journal file takes: after every file listed and the one the header names.</summary>
    public long NextJournalNumber => Math.Max(_header.JournalFileNumber, _files.Count == 0 ? 0 : _files[^1].Number) + 1;

    /// <summary>
    /// Replays the journal after the header's synced transaction and verifies what it rebuilt; damage fails here (a strict
    /// open) with nothing changed. Unless nothing needed replaying, the rebuilt pages are written and synced. With
    /// <paramref name="invalidSlot"/> the other header slot was invalid; <paramref name="mayContinue"/> says whether the
    /// journal may go on in a file of an earlier run (an environment's own may; a group member's never does).
    /// </summary>
    public void Replay(string? invalidSlot, bool mayContinue)
    {
        var walk = _walk = JournalReplay.Walk(JournalEntryReader.ListFiles(_journalDirectory), _journalDirectory, _header,
            (in JournalEntryHeader entry, ReadOnlySpan<byte> payload, string path, long offset) =>
            {
                _pages.Apply(entry, payload, path, offset, _nextPageNumber);
                _lastTransactionId = entry.TransactionId;
                _nextPageNumber = entry.NextPageNumber;
                _rootTree = entry.RootTree;
                return true;
            });
        var damage = walk.Damage;
        if (damage is not null)
        {
            if (invalidSlot is not null)
            {
                // The slot in use may be the older one, whose journal the newer header let go: the data file may hold
                // what followed, so no journal position from here is safe, whatever the recovery mode.
                var damagedSlot = (_header.Sequence & 1) ^ 1;
                throw new StorageCorruptedException(
                    $"File header {invalidSlot} is invalid, so the environment was read from slot {_header.Sequence & 1} (synced through transaction {_header.LastSyncedTransactionId}), and the journal cannot be followed from there: {damage.Message}",
                    _dataFile.Path, damagedSlot, damagedSlot * PageLayout.PageSizeBytes);
            }
            if (_options.JournalRecovery == JournalRecoveryMode.Strict)
            {
                throw new StorageCorruptedException(
                    $"{damage.Message} Opening with JournalRecovery = DiscardAfterDamage would keep transactions up to {walk.LastTransactionId} and give up {damage.LostDescription}.",
                    damage.Path, offsetBytes: damage.OffsetBytes);
            }
        }
        _pages.Verify();
        // A shared file of a group is never written again once its writer closed: the journal goes on in a new file of its own.
        ContinuesInPlace = mayContinue && damage is null && walk.EntriesReplayed == 0 && walk.EndFileNumber == _header.JournalFileNumber && !walk.EndsInSharedFile;
        if (!ContinuesInPlace)
        {
            if (!Directory.Exists(_journalDirectory)) FileIo.CreateDirectory(_journalDirectory, _options.Hooks.FaultInjector);
            WritePages();
        }
        _stats = new RecoveryStats
        {
            ReplayedTransactions = walk.EntriesReplayed,
            TornTailDropped = walk.TornTailDropped,
            TornTail = walk.TornTailDropped ? $"{walk.TornTailPath} at offset {walk.TornTailOffsetBytes}: {walk.TornTailReason}" : null,
            InvalidHeaderSlot = invalidSlot,
        };
        _files = JournalEntryReader.ListFiles(_journalDirectory);
    }

    /// <summary>Writes the rebuilt pages (sorted, adjacent ones merged) and syncs the data file.</summary>
    private void WritePages()
    {
        var pages = _pages.SortedByPage();
        long end = _nextPageNumber;
        foreach (var (page, buffer) in pages) end = Math.Max(end, page + buffer.PageCount);
        _dataFile.EnsurePageCount(end);
        if (pages.Count > 0) _dataFile.WriteSorted(pages);
        _dataFile.Sync();
    }

    /// <summary>
    /// Makes the recovered state the environment's: when nothing needed replaying, <paramref name="journal"/> continues in the
    /// file the header names; otherwise a new journal file is put in place, and only then a header pointing to it is written
    /// (into <paramref name="header"/> too), after which the old files are obsolete and deleted (those provably this
    /// environment's own), or put aside when they held transactions given up.
    /// </summary>
    public RecoveryStats Commit(ref FileHeader header, IEnvironmentJournal journal)
    {
        var walk = _walk!;
        var faults = _options.Hooks.FaultInjector;
        if (ContinuesInPlace)
        {
            journal.Continue(walk.EndFileNumber, walk.EndPath!, walk.EndOffsetBytes, header.LastSyncedTransactionId);
            return _stats with { ForeignJournalFiles = RemoveObsolete(_files, header.JournalFileNumber, header.EnvironmentId, faults, _options.RetainedJournalBytes) };
        }
        var files = _files;
        var stats = _stats;
        var damage = walk.Damage;
        // The files holding transactions given up get a second name in a lost-* folder (durably) before the header lets
        // the journal go: after a crash between the two the next open would delete them, as files below the header's,
        // and some hold transactions replayed into the data file, so they cannot be moved away before it.
        var aside = damage is null ? null : LostJournals.LinkAside(files, damage.FromFileNumber, _journalDirectory, faults);
        journal.StartFile(header.LastSyncedTransactionId + 1);
        (header.JournalFileNumber, header.JournalOffsetBytes) = journal.Position;
        FileHeaderIo.Write(_dataFile, header);
        _dataFile.Sync();
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
                lostDirectory = LostJournals.MoveAside(files, damage.FromFileNumber, header.JournalFileNumber, _journalDirectory, faults);
            }
            stats = stats with
            {
                LostTransactions = damage.Lost.Count,
                Damage = $"{damage.Message} ({damage.Path}, offset {damage.OffsetBytes}); given up: {damage.LostDescription}.",
                LostJournalsDirectory = lostDirectory,
            };
            files = JournalEntryReader.ListFiles(_journalDirectory);
        }
        return stats with { ForeignJournalFiles = RemoveObsolete(files, header.JournalFileNumber, header.EnvironmentId, faults, _options.RetainedJournalBytes) };
    }

    /// <summary>
    /// Deletes the journal files before <paramref name="firstNeededNumber"/> that are this environment's own (their
    /// entries are all in the synced data file), or keeps them for incremental backups when
    /// <paramref name="retainBytes"/> asks (<see cref="RetainedJournals"/>); returns how many it left because it cannot
    /// prove they are its own.
    /// </summary>
    private static int RemoveObsolete(IReadOnlyList<(long Number, string Path)> files, long firstNeededNumber, ulong environmentId, IFaultInjector? faults, long retainBytes)
    {
        var left = 0;
        foreach (var (number, path) in files)
        {
            if (number >= firstNeededNumber) continue;
            var ownership = JournalFiles.Ownership(path, environmentId);
            if (ownership == JournalFileOwnership.Own && retainBytes > 0) RetainedJournals.Keep(path, number, retainBytes, faults);
            else if (ownership is JournalFileOwnership.Own or JournalFileOwnership.SharedLink) JournalFiles.Delete(path, faults);
            else left++;
        }
        return left;
    }

    public void Dispose() => _pages.Dispose();
}
