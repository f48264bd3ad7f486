using System.Globalization;

namespace Storage.Benchmarks.Measurement;

/// <summary>
/// This process's resident memory from <c>/proc/self/status</c>: VmRSS now and VmHWM, the peak since the
/// process started or since <see cref="ResetPeak"/> (which writes 5 to <c>/proc/self/clear_refs</c>, Linux 4.0+).
/// The peak is the kernel's own, so a short spike between two samples is not missed.
/// </summary>
internal static class ProcessMemory
{
    /// <summary>Starts a new peak at the current resident size; false where the kernel does not allow it.</summary>
    public static bool ResetPeak()
    {
        try
        {
            File.WriteAllText("/proc/self/clear_refs", "5");
            return true;
        }
        catch (IOException)
        {
            return false;
        }
        catch (UnauthorizedAccessException)
        {
            return false;
        }
    }

    /// <summary>The peak resident size since the last reset, or null where it is not exposed.</summary>
    public static long? PeakRssBytes() => StatusKib("VmHWM:");

    /// <summary>The resident size now, or null where it is not exposed.</summary>
    public static long? RssBytes() => StatusKib("VmRSS:");

    private static long? StatusKib(string field)
    {
        try
        {
            foreach (var line in File.ReadLines("/proc/self/status"))
            {
                if (!line.StartsWith(field, StringComparison.Ordinal)) continue;
                var text = line.AsSpan(field.Length).Trim();
                if (text.EndsWith("kB", StringComparison.Ordinal)) text = text[..^2].Trim();
                return long.Parse(text, NumberStyles.None, CultureInfo.InvariantCulture) * 1024;
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
