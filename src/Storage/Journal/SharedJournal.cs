using Storage.Commit;
using Storage.Faults;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>
/// The journal writer of an environment group with shared journals: one sequence of files in the root's journal folder,
/// into which every member (the root among them) appends its entries; the entries waiting go out together in one durable
/// write, each with its own header and checksum, and each member's committers wake when the write that carried their
/// entries returns.
/// </summary>
/// <remarks>
/// <para>Every file is hard-linked into each member's journal folder under the member's own next number when it goes into
/// use, and the member's folder is synced before any of the member's entries can be in it; the root's name is the file
/// itself. So each member's folder holds a complete journal of its own, whose recovery steps over the other members'
/// entries, and a member can be opened alone, copied or moved.</para>
/// <para>Moving to a new file, in this order: the file is created, pre-written and given its shared header while it is a
/// spare; renamed to the root's next number; linked into every member's folder (each folder synced); then, inside the next
/// durable write, a group end marker goes after the old file's last entry, with each member's number for the old and the
/// new file and its next transaction, and only then the entries. A shared file is never written again once this writer is
/// closed. Each member removes its own name when its data file is synced past the file; the member that finds its name to
/// be the file's last hands the file back to this writer, which renames it into the root's folder as a spare and puts it
/// into use again instead of writing a new file's zeros (the root's name counts as a member's). Every entry carries the
/// writer's number for its file (<see cref="JournalEntryHeader.SharedFileStamp"/>), and a recycled file's readers take only
/// the entries and markers of its present number: the earlier use's, stale, are never replayed.</para>
/// <para>A failed durable write fails every member (each is poisoned, as a failed write of its own journal poisons an
/// environment alone): whether any of the batch reached the disk is unknown.</para>
/// </remarks>
internal sealed unsafe class SharedJournal : IDisposable
{
    private readonly ulong _writerId;
    private readonly JournalFileSequence _sequence;

    /// <summary>Serializes file I/O: durable writes, switches, links and end markers. Taken before <see cref="_pendingLock"/>.</summary>
    private readonly object _ioLock = new();

    /// <summary>Guards the entries waiting, the position, the members and the current file (held during a switch too).</summary>
    private readonly object _pendingLock = new();

    private readonly List<MemberJournal> _members = [];

    /// <summary>
    /// Serializes the members' retirements of names, so that of two members removing their names of one file at once, the
    /// second sees its name as the last and the file is reused.
    /// </summary>
    private readonly object _retireLock = new();

    /// <summary>Members with entries in <see cref="_batch"/>.</summary>
    private readonly List<MemberJournal> _pendingMembers = [];

    /// <summary>The entries of every member waiting for the next durable write.</summary>
    private readonly JournalBatch _batch = new();
    private JournalFile? _current;
    private long _position;
    private bool _closed;
    private Exception? _failure;
    private long _linksMade;

    /// <summary>The number of the file in use, read without a lock to stamp entries as they are built (-1 before the first).</summary>
    private long _currentNumber = -1;

    /// <remarks>
    /// Spares in the root's folder (kept from when it was open alone, or left by a crash of the group) are written already:
    /// the root's, shared or not, are kept for reuse as its own are (see <see cref="JournalFile.AdoptSpares"/>).
    /// </remarks>
    public SharedJournal(string rootJournalDirectory, ulong rootEnvironmentId, long firstFreeFileNumber, long minFileSizeBytes, long maxFileSizeBytes,
        PlatformIo io, IFaultInjector? faults, JournalWriteMethod writeMethod)
    {
        _writerId = rootEnvironmentId;
        // The writer keeps no file but the one in use: each member holds a name of every file it may have entries in.
        _sequence = new JournalFileSequence(rootJournalDirectory, rootEnvironmentId, shared: true, closePreviousAfterMarker: true, firstFreeFileNumber,
            minFileSizeBytes, maxFileSizeBytes, io, faults, writeMethod);
    }

    /// <summary>The root environment's id: the writer named in every shared file's header.</summary>
    public ulong WriterId => _writerId;

    public DurableWritePolicy WritePolicy => _sequence.WritePolicy;

    /// <summary>The stamp of the file in use, for entries being built (<see cref="JournalEntryHeader.SharedFileStamp"/>).</summary>
    public int CurrentStamp => JournalEntryHeader.StampOf(Volatile.Read(ref _currentNumber));

    /// <summary>The largest file this writer makes.</summary>
    public long MaxFileSizeBytes => _sequence.MaxFileSizeBytes;

    /// <summary>Durable writes made (entries and group end markers), for every member together.</summary>
    public long DurableWrites => _sequence.DurableWrites;

    /// <summary>Bytes of entries written, for every member together.</summary>
    public long BytesWritten => _sequence.BytesWritten;

    /// <summary>Links made into members' folders.</summary>
    public long LinksMade => Interlocked.Read(ref _linksMade);

    /// <summary>New files made (sized and written with zeros).</summary>
    public long FilesCreated => _sequence.FilesCreated;

    /// <summary>Files put into use again: retired files every member was done with, including those found in the root's folder at open.</summary>
    public long FilesReused => _sequence.FilesReused;

    public bool IsDirect
    {
        get
        {
            lock (_pendingLock) return _current?.IsDirect ?? false;
        }
    }

    public int MemberCount
    {
        get
        {
            lock (_pendingLock) return _members.Count;
        }
    }

    internal bool IsFailedOrClosed => Volatile.Read(ref _failure) is not null || Volatile.Read(ref _closed);

    internal Exception? Failure => Volatile.Read(ref _failure);

    /// <summary>
    /// A member joins at open, after its recovery: the file in use (a new one for the first member) is linked into its
    /// folder, and its entries go there from <paramref name="firstTransactionId"/> on.
    /// </summary>
    public void Join(MemberJournal member, long firstTransactionId)
    {
        lock (_ioLock)
        {
            ThrowIfFailedOrClosed();
            lock (_pendingLock)
            {
                if (_current is null)
                {
                    _members.Add(member);
                    member.StartAt(firstTransactionId);
                    try
                    {
                        Switch(0);
                    }
                    catch
                    {
                        _members.Remove(member);
                        throw;
                    }
                    return;
                }
                member.StartAt(firstTransactionId);
                var link = member.Link(_current);
                member.SetPosition(link, _position);
                _members.Add(member);
            }
        }
    }

    /// <summary>A member leaves at its close (its entries written before): later files are not linked into its folder.</summary>
    public void Leave(MemberJournal member)
    {
        lock (_ioLock)
        {
            lock (_pendingLock)
            {
                _members.Remove(member);
                _pendingMembers.Remove(member);
            }
        }
    }

    /// <summary>
    /// Appends a member's entry to those the next durable write takes, moving to a new file first when the current one has
    /// no room. Throws before anything is appended (a full disk while making a file fails only this transaction).
    /// </summary>
    public (long FileNumber, long OffsetBytes) Append(MemberJournal member, byte* entry, long lengthBytes, long transactionId)
    {
        lock (_pendingLock)
        {
            ThrowIfFailedOrClosed();
            if (Fits(lengthBytes)) return AppendLocked(member, entry, lengthBytes, transactionId);
        }
        lock (_ioLock)
        {
            while (true)
            {
                // A file's entries are written before the next file's. The write is made without the pending lock: its
                // callbacks wake committers, who take their waiters' lock and then this one.
                WritePendingLocked();
                lock (_pendingLock)
                {
                    ThrowIfFailedOrClosed();
                    if (Fits(lengthBytes)) return AppendLocked(member, entry, lengthBytes, transactionId);
                    if (!_batch.IsEmpty) continue; // appended meanwhile: written first
                    Switch(lengthBytes);
                    return AppendLocked(member, entry, lengthBytes, transactionId);
                }
            }
        }
    }

    /// <summary>Gives the entry the stamp of file <paramref name="fileNumber"/>, and the checksum that goes with it, unless it has it.</summary>
    private static void Stamp(byte* entry, long fileNumber)
    {
        var header = (JournalEntryHeader*)entry;
        var stamp = JournalEntryHeader.StampOf(fileNumber);
        if (header->SharedFileStamp == stamp) return;
        header->SharedFileStamp = stamp;
        header->Checksum = JournalEntryBuilder.ComputeChecksum(entry, header->PayloadSizeBytes, header->TransactionId);
    }

    private bool Fits(long lengthBytes) => _current is not null && _position + lengthBytes + JournalGroupEndMarker.BlockBytes <= _current.SizeBytes;

    private (long FileNumber, long OffsetBytes) AppendLocked(MemberJournal member, byte* entry, long lengthBytes, long transactionId)
    {
        var copy = _batch.Add(entry, lengthBytes, _position);
        // Built for the file in use when its commit read the stamp; a switch since then (rare) means another.
        Stamp(copy, _current!.Number);
        if (member.NotePending(transactionId, lengthBytes)) _pendingMembers.Add(member);
        var start = _position;
        _position = start + lengthBytes;
        return (member.LinkNumberOf(_current!), start);
    }

    /// <summary>
    /// Writes the entries waiting, of every member, in one durable write for <paramref name="member"/>'s committers, while
    /// the other members' committers wait for it to carry theirs (see <see cref="WillBeWritten"/>); entries appended during
    /// the write are left to their own committers, whom it wakes to lead the next one. One write each, measured: a thread
    /// that went on writing for the others (up to 16 writes) kept its own commit waiting, and W7 made 2,400 writes instead
    /// of 1,600 at the same rate. Returns false at once when another thread is writing: that write takes these entries too.
    /// A member with none of its own waiting (a checkpoint after a file switch wrote them) still writes the others': a
    /// checkpoint of any member leaves no entry of the group waiting.
    /// </summary>
    public bool WritePending(MemberJournal member)
    {
        lock (_pendingLock)
        {
            if (_batch.IsEmpty || _writerActive) return false;
            _writerActive = true;
        }
        bool wrote;
        MemberJournal[]? left = null;
        try
        {
            lock (_ioLock) wrote = WritePendingLocked();
        }
        finally
        {
            lock (_pendingLock)
            {
                _writerActive = false;
                if (!_batch.IsEmpty) left = [.. _pendingMembers];
            }
        }
        if (left is not null)
        {
            foreach (var waiting in left) waiting.Waiters.WakeDurable();
        }
        return wrote;
    }

    /// <summary>A thread is writing for the group (guarded by <see cref="_pendingLock"/>): it writes what waits before it stops.</summary>
    private bool _writerActive;

    /// <summary>
    /// Whether entries of <paramref name="member"/> waiting now will be written without its committers doing it: a thread is
    /// writing for the group, and when it is done it wakes the committers of what is left to lead the next write.
    /// </summary>
    internal bool WillBeWritten(MemberJournal member)
    {
        lock (_pendingLock) return _writerActive;
    }

    /// <summary>
    /// Called with <see cref="_ioLock"/> held and <see cref="_pendingLock"/> not held (the write's callbacks wake committers,
    /// who take their waiters' lock and then the pending lock): members go on appending the next entries while the disk works.
    /// </summary>
    private bool WritePendingLocked()
    {
        AlignedBuffer batch;
        long start, length;
        MemberJournal[] covered;
        JournalFile file;
        lock (_pendingLock)
        {
            ThrowIfFailedOrClosed();
            if (_batch.IsEmpty) return false;
            (batch, start, length) = _batch.Take();
            covered = _pendingMembers.ToArray();
            _pendingMembers.Clear();
            foreach (var member in covered) member.TakePending();
            file = _current!;
        }
        long ticks;
        try
        {
            ticks = _sequence.WriteEntries(file, batch, start, length);
        }
        catch (Exception e)
        {
            // Whether any of the batch reached the disk is unknown: nothing after it is written or acknowledged, in any member.
            Volatile.Write(ref _failure, e);
            MemberJournal[] all;
            lock (_pendingLock) all = [.. _members];
            foreach (var member in covered) member.FailedWith(e, inWrite: true);
            foreach (var member in all) member.FailedWith(e, inWrite: false);
            throw;
        }
        _batch.Written(batch, length);
        foreach (var member in covered) member.BecameDurable(ticks);
        return true;
    }

    /// <summary>
    /// Puts a new file into use (both locks held, nothing waiting): header, rename, a link in every member's folder, and the
    /// group end marker for the previous file, which the next durable write puts in place.
    /// </summary>
    private void Switch(long entryBytes)
    {
        var root = _members.Find(m => m.EnvironmentId == _writerId);
        var next = _sequence.StartNext(entryBytes, JournalGroupEndMarker.BlockBytes, root?.NextTransactionId ?? 1);
        var previous = _current;
        var records = new List<GroupEndRecord>(_members.Count);
        try
        {
            foreach (var member in _members)
            {
                var previousLink = previous is null ? -1 : member.LinkNumberOfOrNone(previous);
                var link = member.Link(next, sync: false);
                Interlocked.Increment(ref _linksMade);
                if (previousLink >= 0) records.Add(new GroupEndRecord(member.EnvironmentId, previousLink, link, member.NextTransactionId));
            }
            // Every folder's new name durable before any entry goes into the file: the syncs at once, so that they cost about one.
            if (_members.Count > 2)
            {
                Parallel.ForEach(_members, new ParallelOptions { MaxDegreeOfParallelism = _members.Count }, member => member.SyncFolder());
            }
            else
            {
                foreach (var member in _members) member.SyncFolder();
            }
            if (records.Count > JournalGroupEndMarker.MaxRecords) throw new InvalidOperationException("More members than a group end marker holds.");
        }
        catch
        {
            // Members linked so far hold a name of a file that gets no entries: the next switch links a new one under their next
            // numbers, and the marker names that; the unused names are removed as obsolete at their next open.
            next.Dispose();
            throw;
        }
        var marker = previous is null ? null : JournalGroupEndMarker.ToBlock(_writerId, previous.Number, records.ToArray());
        var previousEnd = _position;
        _current = next;
        Volatile.Write(ref _currentNumber, next.Number);
        _position = JournalFileHeader.BlockBytes;
        foreach (var member in _members) member.SetPosition(member.LinkNumberOf(next), _position);
        // Files grow while a member still holds the one before the previous, as an environment's own do.
        _sequence.Started(next, previous, previousEnd, marker, _members.Count == 0 ? 1 : _members.Max(member => member.FileCount));
    }

    /// <summary>
    /// A member's name for shared file <paramref name="sharedNumber"/> goes: the member's data file is synced past the file.
    /// When the name is the file's last (every other member, the root among them, has removed its own, each once synced past
    /// it), the file is obsolete for the whole group and is renamed into the root's folder as a spare to be put into use again;
    /// otherwise, or when enough files wait for reuse already, only the name goes. The file in use, and the one whose group
    /// end marker the next write puts in place, are never taken back.
    /// </summary>
    internal void RetireLink(string path, long sharedNumber, long sizeBytes)
    {
        lock (_retireLock)
        {
            bool reuse;
            lock (_pendingLock)
            {
                reuse = !_closed && Volatile.Read(ref _failure) is null && _sequence.WouldKeep(sizeBytes)
                    && _current?.Number != sharedNumber && !_sequence.HasPendingEndMarkerIn(sharedNumber);
            }
            // No one makes a new name for a retired file, so a count of one cannot go up again.
            if (!reuse || Posix.LinkCount(path) != 1)
            {
                JournalFiles.Delete(path, _sequence.Faults);
                return;
            }
            var file = JournalFile.Open(path, number: -1, _sequence.Io);
            try
            {
                // The rename syncs the root's folder; the member's folder, which lost the name, is synced too.
                var from = Path.GetDirectoryName(path)!;
                _sequence.Recycle(file, string.Equals(Path.GetFullPath(from), Path.GetFullPath(_sequence.Directory), StringComparison.Ordinal) ? null : from);
            }
            catch
            {
                file.Dispose();
                throw;
            }
        }
    }

    private void ThrowIfFailedOrClosed()
    {
        if (Volatile.Read(ref _failure) is { } failure)
        {
            throw new StorageException(StorageErrorCode.EnvironmentPoisoned,
                $"A shared journal write failed ({failure.Message}); transactions not yet durable were not committed. Reopen the group's environments to recover from their journals.", failure);
        }
        if (Volatile.Read(ref _closed)) throw new StorageException(StorageErrorCode.EnvironmentClosed, "The environment group was disposed; its shared journal takes no more entries.");
    }

    /// <summary>Closes the writer: nothing is written after this (members write their entries before they leave).</summary>
    public void Dispose()
    {
        MemberJournal[] closing;
        // Under the I/O lock: a write under way finishes first, and none begins after (each checks _closed under it).
        lock (_ioLock)
        {
            lock (_pendingLock)
            {
                if (_closed) return;
                _closed = true;
            }
            // Spares are deleted: files retired after this are deleted too, not kept (see RetireLink).
            _sequence.Close(deleteSpares: true);
            lock (_pendingLock)
            {
                _current?.Dispose();
                _current = null;
                _batch.Dispose();
                closing = [.. _members];
                _members.Clear();
                _pendingMembers.Clear();
            }
        }
        // Outside the locks: a member's committers take its waiters' lock and then this writer's.
        foreach (var member in closing) member.WriterClosed();
    }
}
