using Storage.Platform;

namespace Storage.Journal;

/// <summary>
/// The journal entries appended and not yet written, in one aligned buffer that the next durable write takes whole: while one
/// batch is written, the next fills the other buffer. Not thread-safe: the owner's append lock guards it.
/// </summary>
internal sealed unsafe class JournalBatch : IDisposable
{
    /// <summary>
    /// A buffer grown past this goes back once the batches are small again: after <see cref="SmallBatchesBeforeShrink"/>
    /// batches in a row that fit it, or at once when it grew past <see cref="MaxRetainedCapacityBytes"/>.
    /// </summary>
    private const long RetainedCapacityBytes = 16 << 20;

    /// <summary>
    /// Lazy commits fill a batch until the flusher writes it, and a flusher busy writing pages lets it pass
    /// <see cref="RetainedCapacityBytes"/> again and again: giving the memory back after every larger batch made the
    /// commits filling the next one fault it all in again, page by page (37 µs of each W1-lazy transaction, a tenth of it,
    /// when lazy batches were written only by their delay).
    /// </summary>
    private const int SmallBatchesBeforeShrink = 16;

    /// <summary>Larger than any batch of ordinary lazy commits between writes (a journal file's default size): only a very large transaction grows a buffer past it.</summary>
    private const long MaxRetainedCapacityBytes = 64 << 20;

    /// <summary>Batches in a row (up to <see cref="SmallBatchesBeforeShrink"/>) that fit <see cref="RetainedCapacityBytes"/>.</summary>
    private int _smallBatches;

    private AlignedBuffer _filling = new(64 << 10);
    private AlignedBuffer _writing = new(64 << 10);

    /// <summary>Bytes of entries waiting.</summary>
    /// <remarks>Changed under the owner's append lock; read without it (<see cref="IEnvironmentJournal.PendingBytes"/>).</remarks>
    public long LengthBytes
    {
        get => Volatile.Read(ref _lengthBytes);
        private set => Volatile.Write(ref _lengthBytes, value);
    }

    private long _lengthBytes;

    /// <summary>Where in the file the first entry waiting goes.</summary>
    public long StartBytes { get; private set; }

    public bool IsEmpty => LengthBytes == 0;

    /// <summary>Copies an entry that goes at <paramref name="positionBytes"/> of the file (right after the last one waiting); returns the copy.</summary>
    public byte* Add(byte* entry, long lengthBytes, long positionBytes)
    {
        if (LengthBytes == 0) StartBytes = positionBytes;
        _filling.EnsureCapacity(LengthBytes + lengthBytes, LengthBytes);
        var copy = _filling.Pointer + LengthBytes;
        Buffer.MemoryCopy(entry, copy, lengthBytes, lengthBytes);
        LengthBytes += lengthBytes;
        return copy;
    }

    /// <summary>Takes the entries waiting for a write (the buffer stays valid until the next <see cref="Take"/>); the next entries fill the other buffer.</summary>
    public (AlignedBuffer Buffer, long StartBytes, long LengthBytes) Take()
    {
        var taken = (_filling, StartBytes, LengthBytes);
        (_filling, _writing) = (_writing, _filling);
        LengthBytes = 0;
        return taken;
    }

    /// <summary>
    /// The write of a taken batch of <paramref name="lengthBytes"/> returned: a buffer grown past the retained size goes
    /// back once batches fit that size again, or at once after an unusually large transaction. Called by the writes, which
    /// are made one at a time.
    /// </summary>
    public void Written(AlignedBuffer buffer, long lengthBytes)
    {
        _smallBatches = lengthBytes > RetainedCapacityBytes ? 0 : Math.Min(_smallBatches + 1, SmallBatchesBeforeShrink);
        if (buffer.Capacity <= RetainedCapacityBytes) return;
        if (_smallBatches >= SmallBatchesBeforeShrink || buffer.Capacity > MaxRetainedCapacityBytes) buffer.ShrinkTo(RetainedCapacityBytes);
    }

    public void Dispose()
    {
        LengthBytes = 0;
        _filling.Dispose();
        _writing.Dispose();
    }
}
