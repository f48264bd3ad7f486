using Storage.Faults;
using Storage.Paging;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>
/// Appends entries to the journal, one durable write each, and manages the files: a spare file is
/// prepared in the background before the current one fills, files grow (doubling, up to the maximum)
/// while the load needs them, and retired files are recycled as spares or deleted.
/// </summary>
/// <remarks>
/// Moving to a new file, in this order, so that recovery can tell a missing or cut file from the end of the
/// journal: the new file's header (number, size, first transaction) is written durably while it is still a
/// spare; the spare is renamed to its number (directory synced); then, inside the next durable write, an end
/// marker goes after the old file's last entry, pointing to the new file, and only then the entry. Every file
/// keeps one block free at its end for that marker.
/// </remarks>
internal sealed unsafe class JournalWriter : IEnvironmentJournal
{
    private readonly string _directory;
    private readonly ulong _environmentId;
    private readonly IFaultInjector? _faults;
    private readonly PlatformIo _io;
    private readonly long _maxFileSizeBytes;
    private readonly long _minFileSizeBytes;
    private readonly object _lock = new();
    private readonly List<JournalFile> _files = [];
    /// <summary>
    /// Retired files kept for reuse: enough for a whole flush cycle (the flusher syncs after three full files), so that
    /// a steady load writes no new file's zeros. Spares past what a closed environment keeps are deleted at close.
    /// </summary>
    private const int MaxSpares = 4;

    /// <summary>Prepared or recycled files, in the order they will be used.</summary>
    private readonly Queue<JournalFile> _spares = new();
    private Task? _preparing;
    private long _position;
    private long _nextNumber;
    private long _spareCounter;
    private bool _closed;
    private long _nextSizeBytes;
    private long _durableWrites;
    private long _bytesWritten;

    /// <summary>The end marker the next durable write puts in the previous file before the entry (set by a switch).</summary>
    private (JournalFile File, long OffsetBytes, JournalEndMarker Marker)? _pendingEndMarker;

    /// <summary>
    /// Serializes the journal's file I/O: durable writes, file switches, and the end markers between files. Held while
    /// the disk works; entries are appended meanwhile under <see cref="_pendingLock"/> only.
    /// </summary>
    private readonly object _ioLock = new();

    /// <summary>Guards the entries waiting to be written and the position after them (held briefly, never during I/O).</summary>
    private readonly object _pendingLock = new();

    /// <summary>
    /// Entries appended but not yet written, of durable and lazy commits alike: they go to the current file at
    /// <see cref="_pendingStart"/>, in one write. While one batch is written, the next fills the other buffer.
    /// </summary>
    private AlignedBuffer _pending = new(64 << 10);
    private AlignedBuffer _inFlight = new(64 << 10);
    private long _pendingLength;
    private long _pendingStart;
    private long _pendingLastTransactionId;
    private long _pendingSinceTimestamp;
    private long _durableTransactionId;

    /// <summary>The first failed durable write: every later one fails with it, and nothing after it is acknowledged.</summary>
    private Exception? _failure;

    /// <summary>The last transaction whose entry was in the failed write.</summary>
    private long _failedUpTo;

    /// <summary>Committers waiting for their entries to be durable (group commit).</summary>
    public DurableWaiters Waiters { get; }

    /// <summary>Told of every durable write of entries: bytes and stopwatch ticks.</summary>
    public Action<long, long>? DurableWriteTimed { get; set; }

    /// <summary>Told after every durable write of entries, before the waiters it covered wake (with the I/O lock held: no I/O there).</summary>
    public Action? BecameDurable { get; set; }

    /// <summary>Told once, of the first failed durable write.</summary>
    public Action<Exception>? WriteFailed { get; set; }

    public JournalWriter(string directory, ulong environmentId, long firstFreeFileNumber, long minFileSizeBytes, long maxFileSizeBytes, PlatformIo io, IFaultInjector? faults, JournalWriteMethod writeMethod = JournalWriteMethod.Auto)
    {
        WritePolicy = new DurableWritePolicy(writeMethod);
        _directory = directory;
        _environmentId = environmentId;
        _faults = faults;
        _io = io;
        _nextNumber = firstFreeFileNumber;
        _nextSizeBytes = minFileSizeBytes;
        _minFileSizeBytes = minFileSizeBytes;
        _maxFileSizeBytes = maxFileSizeBytes;
        Waiters = new DurableWaiters(this);
        AdoptSpares();
    }

    /// <summary>Spares left by an earlier run are pre-written already: keep them for use (see <see cref="JournalFile.AdoptSpares"/>).</summary>
    private void AdoptSpares() =>
        _spareCounter = Math.Max(_spareCounter, JournalFile.AdoptSpares(_directory, _environmentId, _nextSizeBytes, MaxSpares, _spares, _io, _faults));

    public long DurableWrites => Interlocked.Read(ref _durableWrites);

    /// <summary>An environment's own files need no stamp.</summary>
    public int EntryStamp => 0;

    public long BytesWritten => Interlocked.Read(ref _bytesWritten);

    /// <summary>Whether the current file was opened O_DIRECT.</summary>
    public bool IsDirect { get; private set; }

    /// <summary>How entries are made durable: measured per file (see <see cref="DurableWritePolicy"/>).</summary>
    public DurableWritePolicy WritePolicy { get; }


    /// <summary>Bytes of the journal files in use and the spares.</summary>
    public long TotalBytes
    {
        get
        {
            lock (_lock) return _files.Sum(file => file.SizeBytes) + _spares.Sum(file => file.SizeBytes);
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
        var file = JournalFile.Open(path, number, _io);
        lock (_lock)
        {
            _files.Add(file);
            _position = positionBytes;
            IsDirect = file.IsDirect;
            _nextNumber = Math.Max(_nextNumber, number + 1);
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
            if (_pendingLength == 0)
            {
                _pendingStart = _position;
                Volatile.Write(ref _pendingSinceTimestamp, System.Diagnostics.Stopwatch.GetTimestamp());
            }
            _pending.EnsureCapacity(_pendingLength + lengthBytes, _pendingLength);
            Buffer.MemoryCopy(entry, _pending.Pointer + _pendingLength, lengthBytes, lengthBytes);
            _pendingLength += lengthBytes;
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
            if (_pendingLength == 0) return false;
            // Counted before a committer can append after this write took its entries (under this lock).
            Interlocked.Increment(ref _writesUnderWay);
            (batch, _inFlight, _pending) = (_pending, _pending, _inFlight);
            start = _pendingStart;
            length = _pendingLength;
            lastTransactionId = _pendingLastTransactionId;
            _pendingLength = 0;
            Volatile.Write(ref _pendingSinceTimestamp, 0);
            file = CurrentFile();
        }
        try
        {
            var started = System.Diagnostics.Stopwatch.GetTimestamp();
            try
            {
                WritePendingEndMarker();
                WriteDurably(file, batch.Pointer, length, start);
            }
            catch (Exception e)
            {
                // Whether any of the batch reached the disk is unknown: the position is no longer trustworthy, so nothing
                // after this is written or acknowledged.
                // Writes are serialized and none follows a failure: this is the first.
                Interlocked.Exchange(ref _failedUpTo, lastTransactionId);
                Volatile.Write(ref _failure, e);
                WriteFailed?.Invoke(e);
                Waiters.WakeAll();
                throw;
            }
            DurableWriteTimed?.Invoke(length, System.Diagnostics.Stopwatch.GetTimestamp() - started);
            if (batch.Capacity > 16 << 20) batch.ShrinkTo(16 << 20);
            MarkDurable(lastTransactionId);
            // Published before the waiters wake, so that they find their commits visible and go on at once.
            BecameDurable?.Invoke();
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

    private int _writesUnderWay;

    private JournalFile CurrentFile()
    {
        lock (_lock)
        {
            return _files[^1];
        }
    }

    private void WritePendingEndMarker()
    {
        if (_pendingEndMarker is not { } pending) return;
        pending.File.WriteEndMarker(pending.Marker, pending.OffsetBytes, _faults);
        _pendingEndMarker = null;
        Interlocked.Increment(ref _durableWrites);
    }

    private void WriteDurably(JournalFile file, byte* data, long lengthBytes, long offsetBytes)
    {
        WritePolicy.Write(file, data, lengthBytes, offsetBytes, _faults);
        Interlocked.Increment(ref _durableWrites);
        Interlocked.Add(ref _bytesWritten, lengthBytes);
    }

    private void MarkDurable(long transactionId) => Interlocked.Exchange(ref _durableTransactionId, transactionId);

    private void Switch(long entryBytes, long transactionId)
    {
        JournalFile? next;
        Task? preparing;
        lock (_lock)
        {
            preparing = _preparing;
        }
        // A failed background preparation is retried below, where its error reaches the committer.
        JournalFile.WaitForPreparation(preparing);
        lock (_lock)
        {
            _spares.TryDequeue(out next);
        }
        var needed = JournalFileHeader.BlockBytes + AlignedBuffer.AlignUp(entryBytes) + JournalEndMarker.BlockBytes;
        if (next is not null && next.SizeBytes < needed)
        {
            next.Delete(_faults);
            next = null;
        }
        next ??= JournalFile.CreateSpare(_directory, NextSpareName(), Math.Max(_nextSizeBytes, needed), _io, _faults);
        // The number is used up even if what follows fails: a retry must not collide with a file of that name that
        // may exist (its header then names a file that holds no entries, which recovery skips).
        var number = _nextNumber++;
        try
        {
            next.WriteHeader(JournalFileHeader.Create(_environmentId, number, next.SizeBytes, transactionId, next.IsRecycled), _faults);
            next.Rename(_directory, JournalFile.FileName(number), number, _faults);
        }
        catch
        {
            next.Dispose();
            throw;
        }
        lock (_lock)
        {
            if (_files.Count > 0)
            {
                // The previous file holds the last committed entry, so no sync can retire it before the marker is written.
                var previous = _files[^1];
                _pendingEndMarker = (previous, _position, JournalEndMarker.Create(_environmentId, previous.Number, number, transactionId));
            }
            _files.Add(next);
            _position = JournalFileHeader.BlockBytes;
            IsDirect = next.IsDirect;
            if (_files.Count > 1) _nextSizeBytes = Math.Min(_nextSizeBytes * 2, _maxFileSizeBytes);
            StartPreparingSpare();
        }
    }

    private string NextSpareName() => JournalFile.SpareName(Interlocked.Increment(ref _spareCounter));

    /// <summary>Called with the lock held.</summary>
    private void StartPreparingSpare()
    {
        if (_spares.Count > 0 || (_preparing is not null && !_preparing.IsCompleted)) return;
        var name = NextSpareName();
        var size = _nextSizeBytes;
        _preparing = Task.Run(() =>
        {
            var file = JournalFile.CreateSpare(_directory, name, size, _io, _faults);
            lock (_lock)
            {
                if (_spares.Count < MaxSpares && !_closed)
                {
                    _spares.Enqueue(file);
                    return;
                }
            }
            file.Delete(_faults);
        });
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
            bool keep;
            lock (_lock)
            {
                // Recycling costs a rename instead of writing the whole file again; small files from the
                // start-up ramp are not worth keeping once files have grown.
                keep = _spares.Count < MaxSpares && file.SizeBytes >= _nextSizeBytes && !_closed;
            }
            // A file with other names keeps its contents for them: only this name goes.
            if (!keep || file.HasOtherNames)
            {
                file.Delete(_faults);
                continue;
            }
            file.Rename(_directory, NextSpareName() + JournalFile.SpareExtension, -1, _faults);
            file.IsRecycled = true;
            lock (_lock) _spares.Enqueue(file);
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
        WaitForSparePreparation();
        lock (_ioLock)
        {
            ThrowIfFailed();
            List<JournalFile> spares;
            lock (_lock)
            {
                _nextSizeBytes = _minFileSizeBytes;
                spares = [.. _spares];
                _spares.Clear();
            }
            foreach (var spare in spares) spare.Delete(_faults);
            Switch(0, firstTransactionId);
            WritePendingEndMarker();
            lock (_lock) return (_files[^1].Number, _position);
        }
    }

    /// <summary>
    /// At a clean close (every entry synced to the data file): deletes spare files, newest first, until the journal's
    /// files together take at most <paramref name="keepBytes"/>, so that a closed environment's directory stays near
    /// its data file. The next open prepares spares again in the background as the load needs them.
    /// </summary>
    public void TrimSpares(long keepBytes)
    {
        WaitForSparePreparation();
        List<JournalFile> trimmed = [];
        lock (_lock)
        {
            long total = _files.Sum(file => file.SizeBytes);
            for (int left = _spares.Count; left > 0; left--)
            {
                var spare = _spares.Dequeue();
                if (total + spare.SizeBytes <= keepBytes)
                {
                    total += spare.SizeBytes;
                    _spares.Enqueue(spare);
                }
                else
                {
                    trimmed.Add(spare);
                }
            }
        }
        foreach (var spare in trimmed) spare.Delete(_faults);
    }

    /// <summary>Waits for a spare being prepared in the background; a failed preparation leaves no spare and is not an error here.</summary>
    private void WaitForSparePreparation() => JournalFile.WaitForPreparation(_preparing);

    public void Dispose()
    {
        WaitForSparePreparation();
        lock (_lock)
        {
            _closed = true;
            foreach (var f in _files) f.Dispose();
            _files.Clear();
            while (_spares.TryDequeue(out var spare)) spare.Dispose();
            _pendingEndMarker = null;
        }
        lock (_ioLock)
        {
            lock (_pendingLock)
            {
                // Entries not written by now are lost, as in a crash: the caller writes them first when it can.
                _pendingLength = 0;
                Volatile.Write(ref _pendingSinceTimestamp, 0);
                _pending.Dispose();
                _inFlight.Dispose();
            }
        }
        // Committers still waiting learn that their transactions were not committed.
        Waiters.WakeAll();
    }
}
