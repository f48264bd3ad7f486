namespace Storage.Benchmarks.Measurement;

/// <summary>
/// This process's bytes sent to the block layer, from <c>write_bytes</c> in <c>/proc/self/io</c>: counts
/// every thread of the process (the engines' background flushers too) and O_DIRECT writes.
/// </summary>
internal static class DeviceIo
{
    private const string ProcPath = "/proc/self/io";
    private const string Field = "write_bytes:";

    /// <summary>The counter now, or null where the kernel does not expose it.</summary>
    public static long? WriteBytes()
    {
        try
        {
            foreach (var line in File.ReadLines(ProcPath))
            {
                if (line.StartsWith(Field, StringComparison.Ordinal)) return long.Parse(line.AsSpan(Field.Length).Trim(), System.Globalization.CultureInfo.InvariantCulture);
            }
        }
        catch (IOException)
        {
        }
        catch (UnauthorizedAccessException)
        {
        }
        return null;
    }
}
