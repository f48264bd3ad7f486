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
internal sealed unsafe class JournalWriter : IDisposable
{
    private readonly string _directory;
    private readonly ulong _environmentId;
    private readonly IFaultInjector? _faults;
    private readonly PlatformIo _io;
    private readonly long _maxFileSizeBytes;
    private readonly object _lock = new();
    private readonly List<JournalFile> _files = [];
    private const int MaxSpares = 2;

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
    /// Serializes the journal's file I/O and position: the committing thread (reserve, append, write) and the flusher
    /// (writing lazy entries when their time is up) both go through it.
    /// </summary>
    private readonly object _ioLock = new();

    /// <summary>Entries of lazy commits not yet written: they go to the current file at <see cref="_lazyStart"/>, in one write.</summary>
    private readonly AlignedBuffer _lazy = new(64 << 10);
    private long _lazyLength;
    private long _lazyStart;
    private long _lazyLastTransactionId;
    private long _lazySinceTimestamp;
    private long _durableTransactionId;

    public JournalWriter(string directory, ulong environmentId, long firstFreeFileNumber, long minFileSizeBytes, long maxFileSizeBytes, PlatformIo io, IFaultInjector? faults)
    {
        _directory = directory;
        _environmentId = environmentId;
        _faults = faults;
        _io = io;
        _nextNumber = firstFreeFileNumber;
        _nextSizeBytes = minFileSizeBytes;
        _maxFileSizeBytes = maxFileSizeBytes;
        AdoptSpares();
    }

    /// <summary>
    /// Spares left by an earlier run are pre-written already: keep them for use. A spare is ours when its first
    /// block is zero (never used) or a journal file header of this environment (recycled); anything else is left alone.
    /// </summary>
    private void AdoptSpares()
    {
        if (!Directory.Exists(_directory)) return;
        foreach (var path in Directory.EnumerateFiles(_directory, "*" + JournalFile.SpareExtension))
        {
            var name = Path.GetFileNameWithoutExtension(path);
            if (!name.StartsWith("spare-", StringComparison.Ordinal)
                || !long.TryParse(name.AsSpan(6), System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out var counter))
            {
                continue;
            }
            _spareCounter = Math.Max(_spareCounter, counter);
            var ownership = JournalFiles.Ownership(path, _environmentId);
            if (ownership is not (JournalFileOwnership.Own or JournalFileOwnership.Blank)) continue;
            var length = new FileInfo(path).Length;
            if (_spares.Count < MaxSpares && length >= _nextSizeBytes && length % AlignedBuffer.Alignment == 0)
            {
                var spare = JournalFile.Open(path, number: -1, _io);
                spare.IsRecycled = ownership == JournalFileOwnership.Own;
                _spares.Enqueue(spare);
            }
            else
            {
                JournalFiles.Delete(path, _faults);
            }
        }
    }

    public long DurableWrites => Interlocked.Read(ref _durableWrites);

    public long BytesWritten => Interlocked.Read(ref _bytesWritten);

    /// <summary>Whether the current file was opened O_DIRECT.</summary>
    public bool IsDirect { get; private set; }

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
            lock (_ioLock)
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
    public void Reserve(long lengthBytes, long transactionId)
    {
        lock (_ioLock)
        {
            JournalFile? current;
            lock (_lock)
            {
                if (_closed) throw new StorageException(StorageErrorCode.EnvironmentClosed, "The environment was disposed; its journal takes no more entries.");
                current = _files.Count > 0 ? _files[^1] : null;
            }
            if (current is not null && _position + lengthBytes + JournalEndMarker.BlockBytes <= current.SizeBytes) return;
            // Lazy entries waiting for the current file go out first: a file's entries are written before the next file's.
            WriteLazyLocked();
            Switch(lengthBytes, transactionId);
        }
    }

    /// <summary>The last transaction whose entry is durable in the journal.</summary>
    public long DurableTransactionId => Interlocked.Read(ref _durableTransactionId);

    /// <summary>Whether lazy entries wait to be written.</summary>
    public bool HasLazyEntries => Volatile.Read(ref _lazySinceTimestamp) != 0;

    /// <summary>When the oldest lazy entry waiting was appended (a <see cref="System.Diagnostics.Stopwatch"/> timestamp), or 0.</summary>
    public long LazySinceTimestamp => Volatile.Read(ref _lazySinceTimestamp);

    /// <summary>
    /// Writes one entry durably, after <see cref="Reserve"/>, in the same write as the lazy entries before it. Returns
    /// where it starts.
    /// </summary>
    public (long FileNumber, long OffsetBytes) Write(byte* entry, long lengthBytes, long transactionId)
    {
        lock (_ioLock)
        {
            if (_lazyLength > 0)
            {
                var position = AppendLocked(entry, lengthBytes, transactionId);
                WriteLazyLocked();
                return position;
            }
            var current = CurrentFile();
            System.Diagnostics.Debug.Assert(_position + lengthBytes + JournalEndMarker.BlockBytes <= current.SizeBytes, "Reserve made room for the entry");
            WritePendingEndMarker();
            var start = _position;
            WriteDurably(current, entry, lengthBytes, start);
            _position = start + lengthBytes;
            MarkDurable(transactionId);
            return (current.Number, start);
        }
    }

    /// <summary>
    /// Adds a lazy commit's entry, after <see cref="Reserve"/>, to the entries written with the next durable commit or by
    /// <see cref="WriteLazy"/>. Returns where it will be.
    /// </summary>
    public (long FileNumber, long OffsetBytes) Append(byte* entry, long lengthBytes, long transactionId)
    {
        lock (_ioLock)
        {
            return AppendLocked(entry, lengthBytes, transactionId);
        }
    }

    /// <summary>Writes the lazy entries waiting, durably, in one write; returns whether there were any.</summary>
    public bool WriteLazy()
    {
        lock (_ioLock)
        {
            return WriteLazyLocked();
        }
    }

    private (long FileNumber, long OffsetBytes) AppendLocked(byte* entry, long lengthBytes, long transactionId)
    {
        var current = CurrentFile();
        System.Diagnostics.Debug.Assert(_position + lengthBytes + JournalEndMarker.BlockBytes <= current.SizeBytes, "Reserve made room for the entry");
        if (_lazyLength == 0)
        {
            _lazyStart = _position;
            Volatile.Write(ref _lazySinceTimestamp, System.Diagnostics.Stopwatch.GetTimestamp());
        }
        _lazy.EnsureCapacity(_lazyLength + lengthBytes, _lazyLength);
        Buffer.MemoryCopy(entry, _lazy.Pointer + _lazyLength, lengthBytes, lengthBytes);
        _lazyLength += lengthBytes;
        _lazyLastTransactionId = transactionId;
        var start = _position;
        _position = start + lengthBytes;
        return (current.Number, start);
    }

    private bool WriteLazyLocked()
    {
        if (_lazyLength == 0) return false;
        WritePendingEndMarker();
        WriteDurably(CurrentFile(), _lazy.Pointer, _lazyLength, _lazyStart);
        _lazyLength = 0;
        Volatile.Write(ref _lazySinceTimestamp, 0);
        if (_lazy.Capacity > 16 << 20) _lazy.ShrinkTo(16 << 20);
        MarkDurable(_lazyLastTransactionId);
        return true;
    }

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
        long done = 0;
        while (done < lengthBytes)
        {
            // One call for any ordinary entry; only values near the 2 GiB limit need more than one.
            var chunk = (int)Math.Min(lengthBytes - done, 1 << 30);
            file.Write(data + done, chunk, offsetBytes + done, _faults);
            done += chunk;
        }
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
        try
        {
            preparing?.Wait();
        }
        catch (AggregateException)
        {
            // A failed background preparation is retried below, where its error reaches the committer.
        }
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

    private string NextSpareName() => "spare-" + Interlocked.Increment(ref _spareCounter).ToString(System.Globalization.CultureInfo.InvariantCulture);

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
            if (!keep)
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

    public void Dispose()
    {
        try
        {
            _preparing?.Wait();
        }
        catch (AggregateException)
        {
            // Nothing to clean: a spare that failed to be made is not used.
        }
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
            // Lazy entries not written by now are lost, as in a crash: the caller writes them first when it can.
            _lazyLength = 0;
            Volatile.Write(ref _lazySinceTimestamp, 0);
            _lazy.Dispose();
        }
    }
}
