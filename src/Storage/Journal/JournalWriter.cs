using Storage.Faults;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>
/// An environment's own journal: appends its entries, writes those waiting in one durable write, and keeps the files
/// that hold entries not yet in the synced data file; a retired file is recycled as a spare or deleted. The files
/// themselves (spares, sizes, moving to the next file and its end marker) are a <see cref="JournalFileSequence"/>.
/// </summary>
internal sealed unsafe class JournalWriter : IEnvironmentJournal
{
    private readonly ulong _environmentId;
    private readonly JournalFileSequence _sequence;

    /// <summary>Guards the files in use and the position.</summary>
    private readonly object _lock = new();

    /// <summary>Files holding entries not yet retired, oldest first; the last is the one in use.</summary>
    private readonly List<JournalFile> _files = [];
    private long _position;
    private bool _closed;
    private IJournalListener? _listener;

    /// <summary>
    /// Serializes the journal's file I/O: durable writes, file switches, and the end markers between files. Held while
    /// the disk works; entries are appended meanwhile under <see cref="_pendingLock"/> only.
    /// </summary>
    private readonly object _ioLock = new();

    /// <summary>Guards the entries waiting to be written and the position after them (held briefly, never during I/O).</summary>
    private readonly object _pendingLock = new();

    /// <summary>Entries appended but not yet written, of durable and lazy commits alike: they go to the current file in one write.</summary>
    private readonly JournalBatch _batch = new();
    private long _pendingLastTransactionId;
    private long _pendingSinceTimestamp;
    private long _durableTransactionId;
    private int _writesUnderWay;

    /// <summary>The first failed durable write: every later one fails with it, and nothing after it is acknowledged.</summary>
    private Exception? _failure;

    /// <summary>The last transaction whose entry was in the failed write.</summary>
    private long _failedUpTo;

    public JournalWriter(string directory, ulong environmentId, long firstFreeFileNumber, long minFileSizeBytes, long maxFileSizeBytes, PlatformIo io, IFaultInjector? faults,
        JournalWriteMethod writeMethod = JournalWriteMethod.Auto, long retainBytes = 0)
    {
        _environmentId = environmentId;
        _retainBytes = retainBytes;
        _retainedDirectory = Path.Combine(Path.GetDirectoryName(Path.GetFullPath(directory))!, RetainedJournals.DirectoryName);
        _sequence = new JournalFileSequence(directory, environmentId, shared: false, closePreviousAfterMarker: false, firstFreeFileNumber,
            minFileSizeBytes, maxFileSizeBytes, io, faults, writeMethod);
        Waiters = new DurableWaiters(this);
    }

    private readonly long _retainBytes;
    private readonly string _retainedDirectory;

    /// <summary>Committers waiting for their entries to be durable (group commit).</summary>
    public DurableWaiters Waiters { get; }

    public void Attach(IJournalListener listener) => _listener = listener;

    public bool IsShared => false;

    public long HeldBytesBeforeFlush(int filesBeforeSync) => _sequence.MaxFileSizeBytes * filesBeforeSync;

    public long DurableWrites => _sequence.DurableWrites;

    /// <summary>An environment's own files need no stamp.</summary>
    public int EntryStamp => 0;

    public long BytesWritten => _sequence.BytesWritten;

    /// <summary>Whether the current file was opened O_DIRECT.</summary>
    public bool IsDirect { get; private set; }

    public DurableWritePolicy WritePolicy => _sequence.WritePolicy;

    /// <summary>Bytes of the journal files in use and the spares.</summary>
    public long TotalBytes => InUseBytes + _sequence.SpareBytes;

    private long InUseBytes
    {
        get
        {
            lock (_lock) return _files.Sum(file => file.SizeBytes);
        }
    }

    public int FileCount
    {
        get
        {
            lock (_lock) return _files.Count;
        }
    }

    /// <summary>Where the next entry goes: the current file and offset.</summary>
    public (long FileNumber, long OffsetBytes) Position
    {
        get
        {
            lock (_pendingLock)
            {
                lock (_lock) return (_files[^1].Number, _position);
            }
        }
    }

    /// <summary>At open: appends after the last entry of an existing file (recovery checked its header and size).</summary>
    public void Continue(long number, string path, long positionBytes, long lastTransactionId)
    {
        Interlocked.Exchange(ref _durableTransactionId, lastTransactionId);
        var file = _sequence.OpenExisting(number, path);
        lock (_lock)
        {
            _files.Add(file);
            _position = positionBytes;
            IsDirect = file.IsDirect;
        }
    }

    /// <summary>At open, after recovery: puts a new file into use for <paramref name="firstTransactionId"/> (durable before it returns).</summary>
    public void StartFile(long firstTransactionId)
    {
        System.Diagnostics.Debug.Assert(_files.Count == 0, "a file is started only before any is in use");
        lock (_ioLock)
        {
            Interlocked.Exchange(ref _durableTransactionId, firstTransactionId - 1);
            Switch(0, firstTransactionId);
        }
    }

    /// <summary>
    /// Makes sure the current file has room for an entry of <paramref name="lengthBytes"/> (and the end marker
    /// after it), switching to a spare (or creating one) if not. Writes nothing to the current file: a failure
    /// here (a full disk) leaves the journal as it was.
    /// </summary>
    /// <remarks>Called by the committing thread only (with the write lock held): nothing else moves the position.</remarks>
    public void Reserve(long lengthBytes, long transactionId)
    {
        ThrowIfFailed();
        lock (_pendingLock)
        {
            JournalFile? current;
            lock (_lock)
            {
                if (_closed) throw new StorageException(StorageErrorCode.EnvironmentClosed, "The environment was disposed; its journal takes no more entries.");
                current = _files.Count > 0 ? _files[^1] : null;
            }
            if (current is not null && _position + lengthBytes + JournalEndMarker.BlockBytes <= current.SizeBytes) return;
        }
        lock (_ioLock)
        {
            // Entries waiting for the current file go out first: a file's entries are written before the next file's.
            WritePendingLocked();
            Switch(lengthBytes, transactionId);
        }
    }

    /// <summary>Whether a write failed or the journal was closed: no entry waiting will be written.</summary>
    public bool IsFailedOrClosed => Volatile.Read(ref _failure) is not null || Volatile.Read(ref _closed);

    /// <summary>
    /// Throws when a write failed or the journal was closed, for a commit waiting for <paramref name="transactionId"/>:
    /// a commit whose own write failed gets that write's error (its code, path and OS error); a later one gets
    /// <see cref="StorageErrorCode.EnvironmentPoisoned"/>.
    /// </summary>
    public void ThrowIfFailedOrClosed(long transactionId)
    {
        if (Volatile.Read(ref _failure) is StorageException own && transactionId <= Interlocked.Read(ref _failedUpTo))
        {
            throw new StorageException(own.ErrorCode, own.Message, own.Path, own.OsError, own);
        }
        ThrowIfFailed();
        if (Volatile.Read(ref _closed)) throw new StorageException(StorageErrorCode.EnvironmentClosed, "The environment was disposed before the transaction's journal entry was written; it was not committed.");
    }

    private void ThrowIfFailed()
    {
        var failure = Volatile.Read(ref _failure);
        if (failure is not null)
        {
            throw new StorageException(StorageErrorCode.EnvironmentPoisoned,
                $"A journal write failed ({failure.Message}); transactions not yet durable were not committed. Reopen the environment to recover from the journal.", failure);
        }
    }

    /// <summary>The last transaction whose entry is durable in the journal.</summary>
    public long DurableTransactionId => Interlocked.Read(ref _durableTransactionId);

    /// <summary>Whether entries wait to be written.</summary>
    public bool HasPendingEntries => Volatile.Read(ref _pendingSinceTimestamp) != 0;

    /// <summary>When the oldest entry waiting was appended (a <see cref="System.Diagnostics.Stopwatch"/> timestamp), or 0.</summary>
    public long PendingSinceTimestamp => Volatile.Read(ref _pendingSinceTimestamp);

    /// <summary>Bytes of the entries waiting (written under the append lock, read without it).</summary>
    public long PendingBytes => _batch.LengthBytes;

    /// <summary>
    /// Adds an entry, after <see cref="Reserve"/>, to those the next durable write takes (in order, each with its own
    /// header and checksum). Returns where it will be. Called by the committing thread only.
    /// </summary>
    public (long FileNumber, long OffsetBytes) Append(byte* entry, long lengthBytes, long transactionId)
    {
        lock (_pendingLock)
        {
            var current = CurrentFile();
            System.Diagnostics.Debug.Assert(_position + lengthBytes + JournalEndMarker.BlockBytes <= current.SizeBytes, "Reserve made room for the entry");
            if (_batch.IsEmpty) Volatile.Write(ref _pendingSinceTimestamp, System.Diagnostics.Stopwatch.GetTimestamp());
            _batch.Add(entry, lengthBytes, _position);
            _pendingLastTransactionId = transactionId;
            var start = _position;
            _position = start + lengthBytes;
            return (current.Number, start);
        }
    }

    /// <summary>A write of this journal is made by one of its own committers (the leader), who writes what waits: never another's.</summary>
    public bool IsInWriteUnderWay(long transactionId) => false;

    /// <summary>Writes the entries waiting, durably, in one write; returns whether there were any.</summary>
    public bool WritePending()
    {
        lock (_ioLock)
        {
            return WritePendingLocked();
        }
    }

    /// <summary>Called with <see cref="_ioLock"/> held.</summary>
    private bool WritePendingLocked()
    {
        ThrowIfFailed();
        AlignedBuffer batch;
        long start, length, lastTransactionId;
        JournalFile file;
        lock (_pendingLock)
        {
            if (_batch.IsEmpty) return false;
            // Counted before a committer can append after this write took its entries (under this lock).
            Interlocked.Increment(ref _writesUnderWay);
            (batch, start, length) = _batch.Take();
            lastTransactionId = _pendingLastTransactionId;
            Volatile.Write(ref _pendingSinceTimestamp, 0);
            file = CurrentFile();
        }
        try
        {
            long ticks;
            try
            {
                ticks = _sequence.WriteEntries(file, batch, start, length);
            }
            catch (Exception e)
            {
                // Whether any of the batch reached the disk is unknown: the position is no longer trustworthy, so nothing
                // after this is written or acknowledged.
                // Writes are serialized and none follows a failure: this is the first.
                Interlocked.Exchange(ref _failedUpTo, lastTransactionId);
                Volatile.Write(ref _failure, e);
                _listener?.WriteFailed(e);
                Waiters.WakeAll();
                throw;
            }
            _listener?.DurableWriteTimed(length, ticks);
            _batch.Written(batch, length);
            Interlocked.Exchange(ref _durableTransactionId, lastTransactionId);
            // Published before the waiters wake, so that they find their commits visible and go on at once.
            _listener?.BecameDurable();
        }
        finally
        {
            // Only once the commits are handed over (see WritesUnderWay).
            Interlocked.Decrement(ref _writesUnderWay);
        }
        Waiters.WakeDurable();
        return true;
    }

    public int WritesUnderWay => Volatile.Read(ref _writesUnderWay);

    private JournalFile CurrentFile()
    {
        lock (_lock)
        {
            return _files[^1];
        }
    }

    /// <summary>Puts the next file into use (the I/O lock held); the next write ends the current one with a marker naming it.</summary>
    private void Switch(long entryBytes, long transactionId)
    {
        var next = _sequence.StartNext(entryBytes, JournalEndMarker.BlockBytes, transactionId);
        JournalFile? previous;
        long previousEnd;
        int inUse;
        lock (_lock)
        {
            // The previous file holds the last committed entry, so no sync can retire it before the marker is written.
            previous = _files.Count > 0 ? _files[^1] : null;
            previousEnd = _position;
            _files.Add(next);
            _position = JournalFileHeader.BlockBytes;
            IsDirect = next.IsDirect;
            inUse = _files.Count;
        }
        var marker = previous is null ? null : JournalEndMarker.Create(_environmentId, previous.Number, next.Number, transactionId).ToBlock();
        _sequence.Started(next, previous, previousEnd, marker, inUse);
    }

    /// <summary>
    /// Retires every file before <paramref name="firstNeededFileNumber"/>: their entries are all in the
    /// synced data file. One may become the next spare; the others are deleted.
    /// </summary>
    public int Retire(long firstNeededFileNumber)
    {
        List<JournalFile>? retired = null;
        lock (_lock)
        {
            while (_files.Count > 1 && _files[0].Number < firstNeededFileNumber)
            {
                (retired ??= []).Add(_files[0]);
                _files.RemoveAt(0);
            }
        }
        if (retired is null) return 0;
        foreach (var file in retired)
        {
            if (_retainBytes > 0 && !file.HasOtherNames)
            {
                // Kept for incremental backups (StorageOptions.RetainedJournalBytes), oldest dropped past the bound.
                RetainedJournals.Keep(file, _retainedDirectory, _retainBytes, _sequence.Faults);
                continue;
            }
            // A file with other names keeps its contents for them: only this name goes.
            if (_sequence.WouldKeep(file.SizeBytes) && !file.HasOtherNames) _sequence.Recycle(file);
            else file.Delete(_sequence.Faults);
        }
        return retired.Count;
    }

    /// <summary>
    /// At a clean close, with every entry in the synced data file: puts a new file of the smallest size into use for
    /// <paramref name="firstTransactionId"/> (spares are deleted first, so none is taken instead), and ends the current
    /// file with a marker naming it. Once the data file's header names the new file, the larger ones before it are
    /// obsolete (<see cref="Retire"/>), so a closed environment does not keep a journal file as large as its busiest
    /// times needed. A failure leaves the header naming the current file, which stays valid.
    /// </summary>
    public (long FileNumber, long OffsetBytes) StartSmallFile(long firstTransactionId)
    {
        lock (_ioLock)
        {
            ThrowIfFailed();
            _sequence.StartSmall();
            Switch(0, firstTransactionId);
            _sequence.WritePendingEndMarker();
            lock (_lock) return (_files[^1].Number, _position);
        }
    }

    /// <summary>
    /// At a clean close (every entry synced to the data file): deletes spare files, newest first, until the journal's
    /// files together take at most <paramref name="keepBytes"/>, so that a closed environment's directory stays near
    /// its data file. The next open prepares spares again in the background as the load needs them.
    /// </summary>
    public void TrimSpares(long keepBytes) => _sequence.TrimSpares(keepBytes, InUseBytes);

    public void Dispose()
    {
        // Under the I/O lock: a write under way finishes first, and none begins after (the batch is empty, Reserve refuses).
        lock (_ioLock)
        {
            lock (_lock) _closed = true;
            _sequence.Close(deleteSpares: false);
            lock (_lock)
            {
                foreach (var f in _files) f.Dispose();
                _files.Clear();
            }
            lock (_pendingLock)
            {
                // Entries not written by now are lost, as in a crash: the caller writes them first when it can.
                _batch.Dispose();
                Volatile.Write(ref _pendingSinceTimestamp, 0);
            }
        }
        // Committers still waiting learn that their transactions were not committed.
        Waiters.WakeAll();
    }
}
