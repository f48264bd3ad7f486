using Storage.Faults;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>
/// The numbered files one journal writer writes into, in one folder: the spares made ahead in the background or kept from
/// retired files, the next file's size, moving to a new file, the end marker the next durable write puts after the previous
/// file's last entry, and the durable writes with their accounting. An environment's own journal (<see cref="JournalWriter"/>)
/// and a group's shared one (<see cref="SharedJournal"/>) each own one; what differs between them (which files are still
/// needed, the links of a group's members) stays with them.
/// </summary>
/// <remarks>
/// <para>Moving to a new file, in this order, so that recovery can tell a missing or cut file from the end of the journal:
/// the new file's header (number, size, first transaction) is written durably while it is still a spare; the spare is
/// renamed to its number (directory synced); then, inside the next durable write, the end marker goes after the old file's
/// last entry, pointing to the new file, and only then the entries. Every file keeps one block free at its end for it.</para>
/// <para>Thread safety: <see cref="StartNext"/>, <see cref="Started"/>, <see cref="WritePendingEndMarker"/> and
/// <see cref="WriteEntries"/> are called with the owner's I/O lock held (one at a time); the spares, the pending marker and
/// the next size are guarded by a lock of this object, since retired files come back from the flusher's thread and spares
/// from the background.</para>
/// </remarks>
internal sealed unsafe class JournalFileSequence : IDisposable
{
    /// <summary>
    /// Spares kept for reuse: enough for a whole flush cycle (the flusher syncs after three full files), so that a steady
    /// load writes no new file's zeros.
    /// </summary>
    public const int MaxSpares = 4;

    private readonly ulong _writerId;
    private readonly bool _shared;
    private readonly bool _closePreviousAfterMarker;
    private readonly long _minFileSizeBytes;
    private readonly object _lock = new();

    /// <summary>Prepared or recycled files, in the order they will be used.</summary>
    private readonly Queue<JournalFile> _spares = new();
    private Task? _preparing;
    private long _nextNumber;
    private long _nextSizeBytes;
    private long _spareCounter;
    private bool _closed;
    private long _durableWrites;
    private long _bytesWritten;
    private long _filesCreated;
    private long _filesReused;

    /// <summary>
    /// The end marker the next durable write puts after the previous file's last entry (set by a switch under the lock; read
    /// without it by every write, which finds it null but after a switch).
    /// </summary>
    private PendingEndMarker? _pendingEndMarker;

    private sealed record PendingEndMarker(JournalFile File, long OffsetBytes, AlignedBuffer Block);

    /// <summary>
    /// A sequence of files in <paramref name="directory"/>, named in their headers as <paramref name="writerId"/>'s (a group's
    /// root for <paramref name="shared"/> files), numbered from <paramref name="firstFreeFileNumber"/>, sized from
    /// <paramref name="minFileSizeBytes"/> up to <paramref name="maxFileSizeBytes"/>. With
    /// <paramref name="closePreviousAfterMarker"/> the previous file is closed once its end marker is written: a group's
    /// shared writer keeps no file but the one in use (its members hold the names), while an environment's own writer keeps
    /// its files open until they are retired.
    /// </summary>
    public JournalFileSequence(string directory, ulong writerId, bool shared, bool closePreviousAfterMarker, long firstFreeFileNumber,
        long minFileSizeBytes, long maxFileSizeBytes, PlatformIo io, IFaultInjector? faults, JournalWriteMethod writeMethod)
    {
        Directory = directory;
        _writerId = writerId;
        _shared = shared;
        _closePreviousAfterMarker = closePreviousAfterMarker;
        _nextNumber = firstFreeFileNumber;
        _minFileSizeBytes = minFileSizeBytes;
        MaxFileSizeBytes = maxFileSizeBytes;
        _nextSizeBytes = minFileSizeBytes;
        Io = io;
        Faults = faults;
        WritePolicy = new DurableWritePolicy(writeMethod);
        // Spares left by an earlier run are pre-written already: kept for use (see JournalFile.AdoptSpares).
        _spareCounter = JournalFile.AdoptSpares(directory, writerId, minFileSizeBytes, MaxSpares, _spares, io, faults);
    }

    public string Directory { get; }

    public PlatformIo Io { get; }

    public IFaultInjector? Faults { get; }

    /// <summary>How entries are made durable: measured per file (see <see cref="DurableWritePolicy"/>).</summary>
    public DurableWritePolicy WritePolicy { get; }

    /// <summary>The largest file this sequence makes.</summary>
    public long MaxFileSizeBytes { get; }

    /// <summary>Durable writes made: entries, and end markers.</summary>
    public long DurableWrites => Interlocked.Read(ref _durableWrites);

    /// <summary>Bytes of entries written.</summary>
    public long BytesWritten => Interlocked.Read(ref _bytesWritten);

    /// <summary>New files made (sized and written with zeros).</summary>
    public long FilesCreated => Interlocked.Read(ref _filesCreated);

    /// <summary>Files put into use again: retired files kept as spares, including those found in the folder at open.</summary>
    public long FilesReused => Interlocked.Read(ref _filesReused);

    /// <summary>Bytes of the spare files.</summary>
    public long SpareBytes
    {
        get
        {
            lock (_lock) return _spares.Sum(file => file.SizeBytes);
        }
    }

    /// <summary>At open: an existing file of this sequence goes on being written; later files are numbered after it.</summary>
    public JournalFile OpenExisting(long number, string path)
    {
        var file = JournalFile.Open(path, number, Io);
        lock (_lock) _nextNumber = Math.Max(_nextNumber, number + 1);
        return file;
    }

    /// <summary>
    /// Puts the next file in place for an entry of <paramref name="entryBytes"/> whose end marker takes
    /// <paramref name="markerBytes"/>: a spare large enough (or a new one), numbered, its header written durably and renamed to
    /// its number. The caller then puts it into use and calls <see cref="Started"/>. A failure here (a full disk) leaves
    /// nothing in use: the number is used up, so a retry never meets a file of that name.
    /// </summary>
    public JournalFile StartNext(long entryBytes, long markerBytes, long firstTransactionId)
    {
        var needed = JournalFileHeader.BlockBytes + AlignedBuffer.AlignUp(entryBytes) + markerBytes;
        var next = TakeSpare(needed);
        if (next is null)
        {
            long size;
            lock (_lock) size = Math.Max(_nextSizeBytes, AlignedBuffer.AlignUp(needed));
            next = JournalFile.CreateSpare(Directory, NextSpareName(), size, Io, Faults);
            Interlocked.Increment(ref _filesCreated);
        }
        long number;
        lock (_lock) number = _nextNumber++;
        try
        {
            // A recycled file says so: its readers then take only entries that belong to this use of it.
            next.WriteHeader(JournalFileHeader.Create(_writerId, number, next.SizeBytes, firstTransactionId, next.IsRecycled, _shared), Faults);
            next.Rename(Directory, JournalFile.FileName(number), number, Faults);
        }
        catch
        {
            next.Dispose();
            throw;
        }
        return next;
    }

    /// <summary>
    /// The file <see cref="StartNext"/> made, <paramref name="next"/>, is in use: the next durable write puts
    /// <paramref name="previousEndMarker"/> (a whole block, now owned by this sequence) in <paramref name="previous"/> at
    /// <paramref name="previousEndOffsetBytes"/> first; the next file doubles in size (up to the maximum) while files are not
    /// retired as fast as they fill (more than two in use after this one started), and a spare of that size is prepared in
    /// the background.
    /// </summary>
    public void Started(JournalFile next, JournalFile? previous, long previousEndOffsetBytes, AlignedBuffer? previousEndMarker, int filesInUse)
    {
        if (next.IsRecycled) Interlocked.Increment(ref _filesReused);
        lock (_lock)
        {
            if (previous is not null && previousEndMarker is not null) _pendingEndMarker = new PendingEndMarker(previous, previousEndOffsetBytes, previousEndMarker);
            if (filesInUse > 2) _nextSizeBytes = Math.Min(_nextSizeBytes * 2, MaxFileSizeBytes);
            StartPreparingSpare();
        }
    }

    /// <summary>Whether the end marker waiting to be written goes into file <paramref name="number"/> (a file that is still needed).</summary>
    public bool HasPendingEndMarkerIn(long number) => Volatile.Read(ref _pendingEndMarker)?.File.Number == number;

    /// <summary>Writes the end marker a switch left waiting, durably, before the entries of the next write.</summary>
    public void WritePendingEndMarker()
    {
        // Written (and cleared) only under the owner's I/O lock, which this caller holds, as does a closing owner.
        if (Volatile.Read(ref _pendingEndMarker) is not { } pending) return;
        pending.File.WriteBlock(pending.Block, pending.OffsetBytes, Faults);
        Volatile.Write(ref _pendingEndMarker, null);
        pending.Block.Dispose();
        if (_closePreviousAfterMarker) pending.File.Dispose();
        Interlocked.Increment(ref _durableWrites);
    }

    /// <summary>
    /// Writes a batch of entries at <paramref name="offsetBytes"/> of <paramref name="file"/>, durable when it returns, by the
    /// measured policy; the end marker a switch left waiting goes first. Returns the stopwatch ticks the writes took.
    /// </summary>
    public long WriteEntries(JournalFile file, AlignedBuffer entries, long offsetBytes, long lengthBytes)
    {
        var started = System.Diagnostics.Stopwatch.GetTimestamp();
        WritePendingEndMarker();
        WritePolicy.Write(file, entries.Pointer, lengthBytes, offsetBytes, Faults);
        Interlocked.Increment(ref _durableWrites);
        Interlocked.Add(ref _bytesWritten, lengthBytes);
        return System.Diagnostics.Stopwatch.GetTimestamp() - started;
    }

    /// <summary>
    /// Whether a retired file of <paramref name="sizeBytes"/> would be kept for reuse: the sequence is open, fewer than
    /// <see cref="MaxSpares"/> wait, and it is as large as the next file (small files from the start-up ramp are not worth
    /// keeping once files have grown).
    /// </summary>
    public bool WouldKeep(long sizeBytes)
    {
        lock (_lock) return !_closed && _spares.Count < MaxSpares && sizeBytes >= _nextSizeBytes;
    }

    /// <summary>
    /// A retired file whose entries are all in the synced data file and which has no other name: renamed as a spare and put
    /// into use again later instead of a new file's zeros (recycling costs a rename instead of writing a whole file). The
    /// caller checked <see cref="WouldKeep"/>; if the sequence closed meanwhile the file is deleted instead. When the file
    /// came from another folder (a group member's name for it), <paramref name="fromDirectory"/> is synced too, before the
    /// file can be used again.
    /// </summary>
    public void Recycle(JournalFile file, string? fromDirectory = null)
    {
        file.Rename(Directory, NextSpareName() + JournalFile.SpareExtension, -1, Faults);
        if (fromDirectory is not null) FileIo.SyncDirectory(fromDirectory, Faults);
        file.IsRecycled = true;
        lock (_lock)
        {
            if (!_closed)
            {
                _spares.Enqueue(file);
                return;
            }
        }
        file.Delete(Faults);
    }

    /// <summary>
    /// At a clean close, before the journal moves to a new file of the smallest size: the next file is made small again and
    /// the spares (made for the busiest times) are deleted, so that none is taken instead.
    /// </summary>
    public void StartSmall()
    {
        WaitForSparePreparation();
        List<JournalFile> spares;
        lock (_lock)
        {
            _nextSizeBytes = _minFileSizeBytes;
            spares = [.. _spares];
            _spares.Clear();
        }
        foreach (var spare in spares) spare.Delete(Faults);
    }

    /// <summary>
    /// At a clean close: deletes spares, newest first, until they and <paramref name="inUseBytes"/> of files in use take at
    /// most <paramref name="keepBytes"/>, so that a closed environment's directory stays near its data file. The next open
    /// prepares spares again in the background as the load needs them.
    /// </summary>
    public void TrimSpares(long keepBytes, long inUseBytes)
    {
        WaitForSparePreparation();
        List<JournalFile> trimmed = [];
        lock (_lock)
        {
            var total = inUseBytes;
            for (var left = _spares.Count; left > 0; left--)
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
        foreach (var spare in trimmed) spare.Delete(Faults);
    }

    private string NextSpareName() => JournalFile.SpareName(Interlocked.Increment(ref _spareCounter));

    /// <summary>A spare at least <paramref name="neededBytes"/> long, oldest first; smaller ones are deleted (the entry needs a larger file).</summary>
    private JournalFile? TakeSpare(long neededBytes)
    {
        // A failed background preparation leaves no spare: a new file is made below, where its error reaches the committer.
        WaitForSparePreparation();
        while (true)
        {
            JournalFile? spare;
            lock (_lock)
            {
                if (!_spares.TryDequeue(out spare)) return null;
            }
            if (spare.SizeBytes >= neededBytes) return spare;
            spare.Delete(Faults);
        }
    }

    /// <summary>
    /// The next file is made (sized and written with zeros) off the commit path while the current one fills, unless a spare
    /// large enough waits. Called with the lock held.
    /// </summary>
    private void StartPreparingSpare()
    {
        if (_closed || _spares.Any(file => file.SizeBytes >= _nextSizeBytes) || (_preparing is not null && !_preparing.IsCompleted)) return;
        var name = NextSpareName();
        var size = _nextSizeBytes;
        _preparing = Task.Run(() =>
        {
            var file = JournalFile.CreateSpare(Directory, name, size, Io, Faults);
            Interlocked.Increment(ref _filesCreated);
            lock (_lock)
            {
                if (_spares.Count < MaxSpares && !_closed)
                {
                    _spares.Enqueue(file);
                    return;
                }
            }
            file.Delete(Faults);
        });
    }

    /// <summary>Waits for a spare being prepared in the background; a failed preparation leaves no spare and is not an error here.</summary>
    private void WaitForSparePreparation()
    {
        Task? preparing;
        lock (_lock) preparing = _preparing;
        JournalFile.WaitForPreparation(preparing);
    }

    /// <summary>
    /// Closes the sequence: nothing is written after this. The spares are closed and left for the next open to adopt, or,
    /// with <paramref name="deleteSpares"/>, deleted (a spare that cannot be is adopted or deleted by the next open). The
    /// owner calls it with its I/O lock held, so that no write uses the end marker this frees.
    /// </summary>
    public void Close(bool deleteSpares)
    {
        WaitForSparePreparation();
        List<JournalFile> spares;
        PendingEndMarker? pending;
        lock (_lock)
        {
            _closed = true;
            spares = [.. _spares];
            _spares.Clear();
            pending = _pendingEndMarker;
            _pendingEndMarker = null;
        }
        if (pending is { } marker)
        {
            marker.Block.Dispose();
            if (_closePreviousAfterMarker) marker.File.Dispose();
        }
        foreach (var spare in spares)
        {
            if (!deleteSpares)
            {
                spare.Dispose();
                continue;
            }
            try
            {
                spare.Delete(Faults);
            }
            catch (StorageException)
            {
                // Left behind: adopted or deleted when the folder's environment next opens.
            }
        }
    }

    public void Dispose() => Close(deleteSpares: false);
}
