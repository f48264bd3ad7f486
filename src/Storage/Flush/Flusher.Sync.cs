using Storage.Journal;
using Storage.Paging;
using Storage.State;

namespace Storage.Flush;

/// <summary>Syncing: the data file synced, then the header that says so, then the journal files it no longer needs retired.</summary>
internal sealed partial class Flusher
{
    /// <summary>Syncs the data file (everything flushed is in it), then makes the header say so.</summary>
    private void Sync()
    {
        var record = _flushedRecord!.Value;
        _port.DataFile.WriteBackInSteps();
        _port.DataFile.Sync();
        WriteHeader(record);
        Volatile.Write(ref _syncedUpTo, record.TransactionId);
        Syncs++;
        _sinceSync.Restart();
        _port.Journal.Retire(record.JournalFileNumber);
    }

    /// <summary>
    /// Writes the other header slot for <paramref name="record"/> (whose pages the data file holds, synced) and syncs it;
    /// only then are the journal files before the one the record names obsolete: the caller retires them.
    /// </summary>
    private void WriteHeader(in CommitRecord record)
    {
        _headerSequence++;
        FileHeaderIo.Write(_port.DataFile, FileHeader.Synced(_port.EnvironmentId, _headerSequence, record));
        _port.DataFile.Sync();
        _flushedRecord = record;
    }

    /// <summary>
    /// At a clean close, when the synced state is the last committed one: writes a header that says the journal goes on
    /// at <paramref name="fileNumber"/> (a new, empty file), then retires the files before it. Nothing changes when not
    /// everything is synced (a reader held the flush back).
    /// </summary>
    private void MoveJournalStart(long lastTransactionId, long fileNumber, long offsetBytes)
    {
        lock (_flushLock)
        {
            if (_flushedRecord is not { } record || record.TransactionId != _syncedUpTo || record.TransactionId != lastTransactionId) return;
            WriteHeader(record with { JournalFileNumber = fileNumber, JournalEndOffsetBytes = offsetBytes });
            _port.Journal.Retire(fileNumber);
        }
    }

    /// <summary>
    /// A member of an environment group with shared journals gets a link to every new shared file, whether it commits or
    /// not: once everything it committed is synced and nothing is on its way (the write lock held, taken only if free),
    /// the header moves to where its journal goes on now and the older links go, so an idle member does not keep the
    /// group's old files. Called under the flush lock.
    /// </summary>
    private void MoveIdleMemberStart(bool writerHeld)
    {
        var member = _port.Journal;
        if (!member.IsShared || member.FileCount <= 1) return;
        if (!writerHeld && !_port.WriterLock.TryEnter(0)) return;
        try
        {
            var state = _port.States.Writer;
            var last = state.TransactionId;
            if (_syncedUpTo != last || member.DurableTransactionId < last || member.HasPendingEntries) return;
            var (number, offset) = member.Position;
            var record = _flushedRecord ?? new CommitRecord(last, number, offset, state.NextPageNumber, state.RootTree);
            if (record.TransactionId != last || number <= record.JournalFileNumber && _flushedRecord is not null) return;
            WriteHeader(record with { JournalFileNumber = number, JournalEndOffsetBytes = offset });
            member.Retire(number);
        }
        finally
        {
            if (!writerHeld) _port.WriterLock.Release();
        }
    }

    /// <summary>Whether everything up to <paramref name="lastTransactionId"/> is synced to the data file.</summary>
    private bool IsSyncedThrough(long lastTransactionId)
    {
        lock (_flushLock) return _flushedRecord is { } record && record.TransactionId == _syncedUpTo && _syncedUpTo == lastTransactionId;
    }

    /// <summary>A closed environment keeps journal files (spares included) only while they take at most this share (1/n) of the data file.</summary>
    private const int ClosedJournalShare = 4;

    /// <summary>
    /// At a clean close, with the write lock held and the thread stopped: the journal's waiting entries written, everything
    /// flushed and synced (the last sync cuts the room grown ahead of the last page: nothing may lengthen the file after it),
    /// then the journal moved to a small new file when its files take more than their share of the data file, and spares
    /// past that share deleted. A failure poisons the environment and loses nothing: everything committed is in the journal,
    /// which the next open replays.
    /// </summary>
    public void CloseCleanly()
    {
        try
        {
            _port.Journal.WritePending();
            _port.DataFile.StopGrowingAhead();
            FlushAndSync(forceSync: true, writerHeld: true);
        }
        catch (Exception e) when (e is StorageException or IOException)
        {
            _port.Health.Poison(e);
        }
        if (_port.Health.IsPoisoned) return;
        var share = _port.DataFile.PageCount * PageLayout.PageSizeBytes / ClosedJournalShare;
        MoveJournalToSmallFile(share);
        if (_port.Health.IsPoisoned) return;
        try
        {
            _port.Journal.TrimSpares(share);
        }
        catch (Exception e) when (e is StorageException or IOException)
        {
            // A spare left behind is adopted or deleted by the next open.
        }
    }

    /// <summary>
    /// At a clean close with everything synced, when the journal's files take more than <paramref name="shareBytes"/>: the
    /// journal goes on in a new file of the smallest size, and the data file's header names it, so the large current file is
    /// retired (see <see cref="IEnvironmentJournal.StartSmallFile"/>). On failure nothing is lost: the header still names the
    /// file it named, which holds what it held (at most a marker naming the new file was added).
    /// </summary>
    private void MoveJournalToSmallFile(long shareBytes)
    {
        var last = _port.States.Readable.TransactionId;
        if (_port.Journal.TotalBytes <= shareBytes || !IsSyncedThrough(last)) return;
        try
        {
            var (number, offset) = _port.Journal.StartSmallFile(last + 1);
            MoveJournalStart(last, number, offset);
        }
        catch (Exception e) when (e is StorageException or IOException)
        {
            // The header names the file it named, whose entries are all in the data file: the next open continues there.
        }
    }
}
