using System.Globalization;

namespace Storage.Benchmarks.Reporting;

/// <summary>Number formats of the report (invariant culture, thousands separators).</summary>
internal static class Format
{
    private static readonly CultureInfo s_culture = CultureInfo.InvariantCulture;

    public static string Count(long value) => value.ToString("N0", s_culture);

    public static string Rate(double perSecond) =>
        perSecond.ToString(perSecond < 100 ? "N2" : "N0", s_culture);

    public static string Decimal(double value) => value.ToString("N2", s_culture);

    public static string Seconds(double seconds) => seconds.ToString("N3", s_culture);

    public static string Milliseconds(TimeSpan time) => time.TotalMilliseconds.ToString("N3", s_culture);

    public static string Latencies(LatencySummary latency) =>
        $"{Milliseconds(latency.P50)} / {Milliseconds(latency.P99)} / {Milliseconds(latency.P999)} / {Milliseconds(latency.Max)}";

    public static string Ratio(double ratio) => ratio.ToString("N2", s_culture) + "x";

    public static string Bytes(long bytes) => $"{Count(bytes)} ({Binary(bytes)})";

    public static string Bytes(long? bytes) => bytes is { } value ? Bytes(value) : "n/a";

    private static string Binary(long bytes)
    {
        string[] units = ["B", "KiB", "MiB", "GiB", "TiB"];
        double value = bytes;
        var unit = 0;
        while (Math.Abs(value) >= 1024 && unit < units.Length - 1)
        {
            value /= 1024;
            unit++;
        }
        return unit == 0 ? $"{bytes} B" : $"{value.ToString("N1", s_culture)} {units[unit]}";
    }
}
