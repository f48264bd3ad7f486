using System.Diagnostics;

namespace Storage.Commit;

/// <summary>
/// Decides whether compressing a journal entry pays, from what it measures: compressing pays when the
/// write time it saves (bytes saved / journal write speed) exceeds the time it takes (bytes / compression
/// speed), that is when <c>saving ratio × compression speed &gt; write speed</c>. On a fast disk with
/// incompressible values it never does; on a slow disk or with compressible data it does. An entry is
/// compressed now and then regardless, to keep the measurements current.
/// </summary>
internal sealed class CompressionPolicy
{
    private const int ProbeEveryEntries = 64;
    private const double Smoothing = 0.2;

    private readonly int _thresholdBytes;
    private double _savingRatio = 0.5;
    private double _compressBytesPerTick;
    private double _writeBytesPerTick;
    private long _entriesSinceProbe;

    public CompressionPolicy(int thresholdBytes) => _thresholdBytes = thresholdBytes;

    /// <summary>Test seam: every payload of at least the threshold is compressed (kept where that saves a block).</summary>
    public bool CompressWhenLarge { get; set; }

    public bool ShouldCompress(long payloadBytes)
    {
        if (_thresholdBytes <= 0 || payloadBytes < _thresholdBytes) return false;
        if (CompressWhenLarge) return true;
        if (++_entriesSinceProbe >= ProbeEveryEntries || _compressBytesPerTick == 0 || _writeBytesPerTick == 0)
        {
            _entriesSinceProbe = 0;
            return true;
        }
        return _savingRatio * _compressBytesPerTick > _writeBytesPerTick;
    }

    public void RecordCompression(long inputBytes, long outputBytes, long elapsedTicks)
    {
        var saving = inputBytes <= 0 ? 0 : Math.Max(0, 1 - (double)outputBytes / inputBytes);
        _savingRatio += Smoothing * (saving - _savingRatio);
        Blend(ref _compressBytesPerTick, inputBytes, elapsedTicks);
    }

    public void RecordWrite(long bytes, long elapsedTicks) => Blend(ref _writeBytesPerTick, bytes, elapsedTicks);

    private static void Blend(ref double bytesPerTick, long bytes, long elapsedTicks)
    {
        var sample = bytes / (double)Math.Max(1, elapsedTicks);
        bytesPerTick = bytesPerTick == 0 ? sample : bytesPerTick + Smoothing * (sample - bytesPerTick);
    }

    public static long Now() => Stopwatch.GetTimestamp();
}
