using Storage.Commit;
using Storage.Faults;

namespace Storage.Journal;

/// <summary>
/// Chooses how journal writes are made durable, by measuring, as <see cref="CompressionPolicy"/> decides compression:
/// the first writes into each journal file take the two methods of <see cref="JournalWriteMethod"/> in turn, and once
/// each has <see cref="SamplesPerMethod"/> writes timed the one with the lower median goes on for the rest of the file
/// (buffered writes only when clearly lower, see <see cref="BufferedWinPercent"/>).
/// Each file measures again, so the choice follows the device (a disk shared with other work, a cache that fills up).
/// Taking them in turn gives both methods the same mix of entry sizes and the same moments of the disk.
/// </summary>
/// <remarks>Used by the journal's writer only, under its I/O lock.</remarks>
internal sealed class DurableWritePolicy
{
    public const int SamplesPerMethod = 8;

    /// <summary>Buffered writes are chosen only when their median is below this share (in percent) of direct writes'.</summary>
    public const int BufferedWinPercent = 85;

    private readonly JournalWriteMethod _configured;
    private readonly long[] _direct = new long[SamplesPerMethod];
    private readonly long[] _buffered = new long[SamplesPerMethod];
    private int _directCount;
    private int _bufferedCount;

    public DurableWritePolicy(JournalWriteMethod configured)
    {
        _configured = configured;
        Chosen = configured == JournalWriteMethod.Auto ? JournalWriteMethod.DirectSync : configured;
    }

    /// <summary>The number of the file measured last (each file measures anew).</summary>
    private long _measuredFileNumber = -1;

    /// <summary>
    /// Writes <paramref name="lengthBytes"/> at <paramref name="offsetBytes"/> of <paramref name="file"/>, durable when it
    /// returns, by the method this policy chooses, and times it (one call for any ordinary entry; only values near the 2 GiB
    /// limit need more).
    /// </summary>
    public unsafe void Write(JournalFile file, byte* data, long lengthBytes, long offsetBytes, IFaultInjector? faults)
    {
        if (file.Number != _measuredFileNumber)
        {
            _measuredFileNumber = file.Number;
            StartFile();
        }
        var method = Next();
        var started = System.Diagnostics.Stopwatch.GetTimestamp();
        for (long done = 0; done < lengthBytes;)
        {
            var chunk = (int)Math.Min(lengthBytes - done, 1 << 30);
            file.Write(data + done, chunk, offsetBytes + done, faults, method);
            done += chunk;
        }
        Record(method, System.Diagnostics.Stopwatch.GetTimestamp() - started);
    }

    /// <summary>The method in use, or the one the measurement started with while it runs.</summary>
    public JournalWriteMethod Chosen { get; private set; }

    /// <summary>Whether writes are still being taken in turn to measure both methods.</summary>
    public bool IsMeasuring => _configured == JournalWriteMethod.Auto && (_directCount < SamplesPerMethod || _bufferedCount < SamplesPerMethod);

    private long _directMedian;
    private long _bufferedMedian;
    private long _directChoices;
    private long _bufferedChoices;

    /// <summary>For the environment's statistics (read on any thread: each figure is read whole, the set maybe not).</summary>
    public JournalWriteStats Snapshot() => new()
    {
        Method = Chosen,
        DirectSyncMedian = System.Diagnostics.Stopwatch.GetElapsedTime(0, Volatile.Read(ref _directMedian)),
        BufferedThenSyncMedian = System.Diagnostics.Stopwatch.GetElapsedTime(0, Volatile.Read(ref _bufferedMedian)),
        DirectSyncChosen = Volatile.Read(ref _directChoices),
        BufferedThenSyncChosen = Volatile.Read(ref _bufferedChoices),
    };

    /// <summary>The method for the next write.</summary>
    public JournalWriteMethod Next()
    {
        if (!IsMeasuring) return Chosen;
        return _directCount <= _bufferedCount ? JournalWriteMethod.DirectSync : JournalWriteMethod.BufferedThenSync;
    }

    /// <summary>A write made with <paramref name="method"/> returned after <paramref name="ticks"/>.</summary>
    public void Record(JournalWriteMethod method, long ticks)
    {
        if (!IsMeasuring) return;
        if (method == JournalWriteMethod.DirectSync && _directCount < SamplesPerMethod) _direct[_directCount++] = ticks;
        else if (method == JournalWriteMethod.BufferedThenSync && _bufferedCount < SamplesPerMethod) _buffered[_bufferedCount++] = ticks;
        if (IsMeasuring) return;
        var direct = Median(_direct);
        var buffered = Median(_buffered);
        Volatile.Write(ref _directMedian, direct);
        Volatile.Write(ref _bufferedMedian, buffered);
        // Direct writes leave the page cache to the data file, so buffered ones must win clearly: on a disk where the two
        // are close, medians of eight writes each pick the slower method for whole files by chance.
        Chosen = buffered * 100 < direct * BufferedWinPercent ? JournalWriteMethod.BufferedThenSync : JournalWriteMethod.DirectSync;
        if (Chosen == JournalWriteMethod.DirectSync) Interlocked.Increment(ref _directChoices);
        else Interlocked.Increment(ref _bufferedChoices);
    }

    /// <summary>A new journal file went into use: measure again.</summary>
    public void StartFile()
    {
        if (_configured != JournalWriteMethod.Auto) return;
        _directCount = 0;
        _bufferedCount = 0;
    }

    private static long Median(long[] samples)
    {
        Array.Sort(samples);
        return (samples[SamplesPerMethod / 2 - 1] + samples[SamplesPerMethod / 2]) / 2;
    }
}
