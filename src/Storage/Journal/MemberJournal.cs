using Storage.Faults;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>
/// The journal of one environment of a group with shared journals: its entries go into the group's
/// <see cref="SharedJournal"/>, and its journal folder holds a link to each shared file it may have entries in, under
/// numbers of its own (the root's names are the files themselves). It keeps this environment's side: which of its
/// transactions are durable, its committers, its links and their retirement.
/// </summary>
internal sealed unsafe class MemberJournal : IEnvironmentJournal
{
    private readonly SharedJournal _shared;
    private readonly string _directory;
    private readonly IFaultInjector? _faults;

    /// <summary>This environment's names of shared files, oldest first: its number, the path, the shared file's size and its root number.</summary>
    private readonly List<(long Number, string Path, long SizeBytes, long SharedNumber)> _links = [];
    private readonly object _lock = new();
    private long _nextLinkNumber;
    private long _linkedBytes;
    private long _durableTransactionId;
    private long _lastAppended;
    private long _pendingLast;
    private long _pendingSince;
    private long _pendingBytes;
    /// <summary>The last transaction of this environment in the write under way (or the last written).</summary>
    private long _inWriteLast;
    private long _inWriteBytes;
    private long _failedUpTo;
    private Exception? _failure;
    private bool _closed;
    private bool _joined;
    private long _durableWrites;
    private long _bytesWritten;
    private (long FileNumber, long OffsetBytes) _position;

    public MemberJournal(SharedJournal shared, string journalDirectory, ulong environmentId, long firstFreeFileNumber, IFaultInjector? faults)
    {
        _shared = shared;
        _directory = journalDirectory;
        EnvironmentId = environmentId;
        _nextLinkNumber = firstFreeFileNumber;
        _faults = faults;
        Waiters = new DurableWaiters(this);
    }

    public ulong EnvironmentId { get; }

    /// <summary>Whether this is the group's root, whose journal folder the shared files are written in.</summary>
    public bool IsRoot => EnvironmentId == _shared.WriterId;

    public DurableWaiters Waiters { get; }

    private IJournalListener? _listener;

    public void Attach(IJournalListener listener) => _listener = listener;

    public bool IsShared => true;

    public long DurableWrites => Interlocked.Read(ref _durableWrites);

    public int EntryStamp => _shared.CurrentStamp;

    /// <summary>
    /// What this member may hold of the group's files before it asks for a flush: as much as an environment's own journal holds
    /// between syncs. A member holds a name for every shared file, whose entries are mostly the other members', so it counts
    /// what it holds, not what it wrote; the group's files are sized by the root's writer, whatever this member's options say.
    /// </summary>
    public long HeldBytesBeforeFlush(int filesBeforeSync) => _shared.MaxFileSizeBytes * filesBeforeSync;

    public long BytesWritten => Interlocked.Read(ref _bytesWritten);

    public bool IsDirect => _shared.IsDirect;

    public DurableWritePolicy WritePolicy => _shared.WritePolicy;

    public long TotalBytes => LinkedBytes;

    /// <summary>The size of the shared files this environment has names for (read on every commit, without a lock).</summary>
    public long LinkedBytes => Interlocked.Read(ref _linkedBytes);

    public int FileCount
    {
        get
        {
            lock (_lock) return _links.Count;
        }
    }

    public (long FileNumber, long OffsetBytes) Position
    {
        get
        {
            lock (_lock) return _position;
        }
    }

    /// <summary>The transaction id this environment's next entry carries (read by the writer with its locks held).</summary>
    internal long NextTransactionId => Interlocked.Read(ref _lastAppended) + 1;

    /// <summary>A member never appends to a file of an earlier run: its journal goes on in the group's file in use.</summary>
    public void Continue(long number, string path, long positionBytes, long lastTransactionId) =>
        throw new InvalidOperationException("A member of a group with shared journals starts in the group's current file.");

    public void StartFile(long firstTransactionId)
    {
        _shared.Join(this, firstTransactionId);
        _joined = true;
    }

    /// <summary>Called by the writer as the member joins.</summary>
    internal void StartAt(long firstTransactionId)
    {
        Interlocked.Exchange(ref _durableTransactionId, firstTransactionId - 1);
        Interlocked.Exchange(ref _lastAppended, firstTransactionId - 1);
    }

    /// <summary>
    /// Gives the shared file a name in this environment's folder under its next number and, unless the caller syncs the
    /// folder itself (<see cref="SyncFolder"/>), makes the name durable (the root's name is the file itself). Returns the
    /// number. Called by the writer with its locks held.
    /// </summary>
    internal long Link(JournalFile file, bool sync = true)
    {
        if (IsRoot)
        {
            lock (_lock)
            {
                _links.Add((file.Number, file.Path, file.SizeBytes, file.Number));
                _nextLinkNumber = Math.Max(_nextLinkNumber, file.Number + 1);
                Interlocked.Add(ref _linkedBytes, file.SizeBytes);
            }
            return file.Number;
        }
        long number;
        lock (_lock) number = _nextLinkNumber++;
        var path = Path.Combine(_directory, JournalFile.FileName(number));
        JournalLinks.Create(file.Path, path);
        if (sync) SyncFolder();
        lock (_lock)
        {
            _links.Add((number, path, file.SizeBytes, file.Number));
            Interlocked.Add(ref _linkedBytes, file.SizeBytes);
        }
        return number;
    }

    /// <summary>Makes the links made in this environment's journal folder durable (the root's names are made durable by their rename).</summary>
    internal void SyncFolder()
    {
        if (!IsRoot) FileIo.SyncDirectory(_directory, _faults);
    }

    /// <summary>This environment's number for the shared file.</summary>
    internal long LinkNumberOf(JournalFile file) =>
        LinkNumberOfOrNone(file) is var number and >= 0 ? number : throw new InvalidOperationException("The shared file is not linked into this environment's folder.");

    internal long LinkNumberOfOrNone(JournalFile file)
    {
        lock (_lock)
        {
            for (var i = _links.Count - 1; i >= 0; i--)
            {
                if (_links[i].SharedNumber == file.Number) return _links[i].Number;
            }
        }
        return -1;
    }

    internal void SetPosition(long fileNumber, long offsetBytes)
    {
        lock (_lock) _position = (fileNumber, offsetBytes);
    }

    public void Reserve(long lengthBytes, long transactionId)
    {
        if (!_joined) throw new InvalidOperationException("The member has not joined its group's journal.");
        ThrowIfFailedOrClosed(transactionId);
    }

    public (long FileNumber, long OffsetBytes) Append(byte* entry, long lengthBytes, long transactionId)
    {
        var position = _shared.Append(this, entry, lengthBytes, transactionId);
        lock (_lock) _position = (position.FileNumber, position.OffsetBytes + lengthBytes);
        return position;
    }

    /// <summary>An entry of this environment was appended (the writer's pending lock held); true when it is the first waiting.</summary>
    internal bool NotePending(long transactionId, long lengthBytes)
    {
        Interlocked.Exchange(ref _lastAppended, transactionId);
        var first = Interlocked.Read(ref _pendingBytes) == 0;
        if (first) Volatile.Write(ref _pendingSince, System.Diagnostics.Stopwatch.GetTimestamp());
        Interlocked.Exchange(ref _pendingLast, transactionId);
        Interlocked.Add(ref _pendingBytes, lengthBytes);
        return first;
    }

    /// <summary>The writer takes this environment's waiting entries into the write it is making.</summary>
    internal void TakePending()
    {
        Interlocked.Exchange(ref _inWriteLast, Interlocked.Exchange(ref _pendingLast, 0));
        _inWriteBytes = Interlocked.Exchange(ref _pendingBytes, 0);
        Volatile.Write(ref _pendingSince, 0);
    }

    /// <summary>The write that carried this environment's entries returned.</summary>
    internal void BecameDurable(long ticks)
    {
        Interlocked.Increment(ref _durableWrites);
        Interlocked.Add(ref _bytesWritten, _inWriteBytes);
        Interlocked.Exchange(ref _durableTransactionId, _inWriteLast);
        _listener?.DurableWriteTimed(_inWriteBytes, ticks);
        _listener?.BecameDurable();
        Waiters.WakeDurable();
    }

    /// <summary>A write of the group failed: this environment is poisoned; <paramref name="inWrite"/> when its entries were in it.</summary>
    internal void FailedWith(Exception failure, bool inWrite)
    {
        if (Interlocked.CompareExchange(ref _failure, failure, null) is not null) return;
        if (inWrite) Interlocked.Exchange(ref _failedUpTo, _inWriteLast);
        _listener?.WriteFailed(failure);
        Waiters.WakeAll();
    }

    /// <summary>The group's writer was closed before this environment.</summary>
    internal void WriterClosed()
    {
        Volatile.Write(ref _closed, true);
        Waiters.WakeAll();
    }

    public bool IsFailedOrClosed => Volatile.Read(ref _failure) is not null || Volatile.Read(ref _closed) || _shared.IsFailedOrClosed;

    public void ThrowIfFailedOrClosed(long transactionId)
    {
        var failure = Volatile.Read(ref _failure) ?? _shared.Failure;
        if (failure is StorageException own && transactionId <= Interlocked.Read(ref _failedUpTo))
        {
            throw new StorageException(own.ErrorCode, own.Message, own.Path, own.OsError, own);
        }
        if (failure is not null)
        {
            throw new StorageException(StorageErrorCode.EnvironmentPoisoned,
                $"A shared journal write failed ({failure.Message}); transactions not yet durable were not committed. Reopen the environment to recover from the journal.", failure);
        }
        if (Volatile.Read(ref _closed) || _shared.IsFailedOrClosed)
        {
            throw new StorageException(StorageErrorCode.EnvironmentClosed, "The environment (or its group) was disposed before the transaction's journal entry was written; it was not committed.");
        }
    }

    public long DurableTransactionId => Interlocked.Read(ref _durableTransactionId);

    public bool HasPendingEntries => Volatile.Read(ref _pendingSince) != 0;

    /// <summary>Always one: the group's writer takes and writes a member's entries on its own schedule, so pruning keeps what a flush of any of them could need.</summary>
    public int WritesUnderWay => 1;

    public long PendingSinceTimestamp => Volatile.Read(ref _pendingSince);

    public long PendingBytes => Interlocked.Read(ref _pendingBytes);

    public bool WritePending() => _shared.WritePending(this);

    public bool IsInWriteUnderWay(long transactionId) =>
        transactionId > Interlocked.Read(ref _durableTransactionId)
        && (transactionId <= Interlocked.Read(ref _inWriteLast) || _shared.WillBeWritten(this));

    /// <summary>Whether entries of this environment were appended and no write has taken them yet.</summary>
    internal bool HasUnwrittenEntries => Interlocked.Read(ref _pendingBytes) != 0;

    /// <summary>
    /// Removes this environment's names of the shared files before <paramref name="firstNeededFileNumber"/> (never the one in
    /// use); the group's writer takes a file back for reuse when the name was its last.
    /// </summary>
    public int Retire(long firstNeededFileNumber)
    {
        List<(string Path, long SharedNumber, long SizeBytes)> retired = [];
        lock (_lock)
        {
            while (_links.Count > 1 && _links[0].Number < firstNeededFileNumber)
            {
                retired.Add((_links[0].Path, _links[0].SharedNumber, _links[0].SizeBytes));
                Interlocked.Add(ref _linkedBytes, -_links[0].SizeBytes);
                _links.RemoveAt(0);
            }
        }
        foreach (var (path, sharedNumber, sizeBytes) in retired) _shared.RetireLink(path, sharedNumber, sizeBytes);
        return retired.Count;
    }

    /// <summary>At a clean close the journal goes on where it is: the file in use is the group's, which stays in use.</summary>
    public (long FileNumber, long OffsetBytes) StartSmallFile(long firstTransactionId) => Position;

    public void TrimSpares(long keepBytes)
    {
        // A member has no spares: the group's writer makes its files.
    }

    public void Dispose()
    {
        Volatile.Write(ref _closed, true);
        if (_joined)
        {
            _joined = false;
            _shared.Leave(this);
        }
        Waiters.WakeAll();
    }
}
