using System.Globalization;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Measurement;

/// <summary>
/// This process's bytes moved to and from the block layer, from <c>write_bytes</c> and <c>read_bytes</c> in
/// <c>/proc/self/io</c>: counts every thread of the process (the engines' background flushers too), O_DIRECT
/// I/O and page faults on mapped files, but not what the page cache served. A counter is null where the
/// kernel does not expose it. Take a <see cref="Snapshot"/> before and after, and report the difference.
/// </summary>
internal readonly record struct DeviceIo(long? ReadBytes, long? WriteBytes)
{
    private const string ProcPath = "/proc/self/io";
    private const string ReadField = "read_bytes:";
    private const string WriteField = "write_bytes:";

    /// <summary>Both counters now.</summary>
    public static DeviceIo Snapshot()
    {
        long? read = null;
        long? written = null;
        try
        {
            foreach (var line in File.ReadLines(ProcPath))
            {
                if (line.StartsWith(ReadField, StringComparison.Ordinal)) read = Parse(line, ReadField);
                else if (line.StartsWith(WriteField, StringComparison.Ordinal)) written = Parse(line, WriteField);
            }
        }
        catch (IOException)
        {
        }
        catch (UnauthorizedAccessException)
        {
        }
        return new DeviceIo(read, written);
    }

    /// <summary>What moved between <paramref name="before"/> and this snapshot.</summary>
    public DeviceIo Since(DeviceIo before) => new(ReadBytes - before.ReadBytes, WriteBytes - before.WriteBytes);

    /// <summary>The report's "device bytes written" figure of a difference.</summary>
    public Figure WrittenFigure => new("device bytes written", Format.Bytes(WriteBytes));

    /// <summary>The report's "device bytes read" figure of a difference.</summary>
    public Figure ReadFigure => new("device bytes read", Format.Bytes(ReadBytes));

    /// <summary>Both figures of a difference, written first.</summary>
    public IEnumerable<Figure> Figures => [WrittenFigure, ReadFigure];

    private static long Parse(string line, string field) => long.Parse(line.AsSpan(field.Length).Trim(), CultureInfo.InvariantCulture);
}
