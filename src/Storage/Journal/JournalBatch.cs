using Storage.Platform;

namespace Storage.Journal;

/// <summary>
/// The journal entries appended and not yet written, in one aligned buffer that the next durable write takes whole: while one
/// batch is written, the next fills the other buffer. Not thread-safe: the owner's append lock guards it.
/// </summary>
internal sealed unsafe class JournalBatch : IDisposable
{
    /// <summary>A buffer grown past this for an unusually large transaction is given back once it is written.</summary>
    private const long RetainedCapacityBytes = 16 << 20;

    private AlignedBuffer _filling = new(64 << 10);
    private AlignedBuffer _writing = new(64 << 10);

    /// <summary>Bytes of entries waiting.</summary>
    public long LengthBytes { get; private set; }

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

    /// <summary>The write of a taken buffer returned: memory grown for an unusually large transaction goes back.</summary>
    public static void Written(AlignedBuffer buffer)
    {
        if (buffer.Capacity > RetainedCapacityBytes) buffer.ShrinkTo(RetainedCapacityBytes);
    }

    public void Dispose()
    {
        LengthBytes = 0;
        _filling.Dispose();
        _writing.Dispose();
    }
}
