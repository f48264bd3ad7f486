using System.Diagnostics;
using System.Numerics;

namespace Storage.Diagnostics;

/// <summary>
/// Counts durations in log-linear buckets of microseconds: exact below 64 µs, then 32 buckets per power of two
/// (within about 3%), up to hours. Recording is one increment; any thread may record and read.
/// </summary>
internal sealed class LatencyHistogram
{
    private const int LinearBuckets = 64;
    private const int SubBucketBits = 5;
    private const int SubBuckets = 1 << SubBucketBits;
    private const int FirstExponent = 6; // 2^6 = LinearBuckets
    private const int Exponents = 64 - FirstExponent;

    private readonly long[] _counts = new long[LinearBuckets + Exponents * SubBuckets];
    private long _count;
    private long _sumTicks;
    private long _maxTicks;

    public void Record(long elapsedTicks)
    {
        if (elapsedTicks < 0) elapsedTicks = 0;
        Interlocked.Increment(ref _counts[BucketOf(ToMicroseconds(elapsedTicks))]);
        Interlocked.Increment(ref _count);
        Interlocked.Add(ref _sumTicks, elapsedTicks);
        var max = Volatile.Read(ref _maxTicks);
        while (elapsedTicks > max)
        {
            var seen = Interlocked.CompareExchange(ref _maxTicks, elapsedTicks, max);
            if (seen == max) break;
            max = seen;
        }
    }

    /// <summary>Count, mean, percentiles (each the upper edge of its bucket, at most the maximum) and maximum so far.</summary>
    public LatencySummary Summarize()
    {
        var count = Volatile.Read(ref _count);
        if (count == 0) return default;
        var counts = new long[_counts.Length];
        long total = 0;
        for (var i = 0; i < counts.Length; i++) total += counts[i] = Volatile.Read(ref _counts[i]);
        var max = TicksToTimeSpan(Volatile.Read(ref _maxTicks));
        return new LatencySummary
        {
            Count = total,
            Mean = TicksToTimeSpan(Volatile.Read(ref _sumTicks) / Math.Max(1, count)),
            P50 = Percentile(counts, total, 0.50, max),
            P90 = Percentile(counts, total, 0.90, max),
            P99 = Percentile(counts, total, 0.99, max),
            P999 = Percentile(counts, total, 0.999, max),
            Max = max,
        };
    }

    private static TimeSpan Percentile(long[] counts, long total, double fraction, TimeSpan max)
    {
        var rank = (long)Math.Ceiling(total * fraction);
        long seen = 0;
        for (var i = 0; i < counts.Length; i++)
        {
            seen += counts[i];
            if (seen >= rank && seen > 0)
            {
                var upper = TimeSpan.FromMicroseconds(UpperEdgeMicroseconds(i));
                return upper < max ? upper : max;
            }
        }
        return max;
    }

    internal static int BucketOf(long microseconds)
    {
        if (microseconds < LinearBuckets) return (int)microseconds;
        var exponent = 63 - BitOperations.LeadingZeroCount((ulong)microseconds);
        var sub = (int)(microseconds >> (exponent - SubBucketBits)) & (SubBuckets - 1);
        return LinearBuckets + (exponent - FirstExponent) * SubBuckets + sub;
    }

    /// <summary>The smallest whole number of microseconds above every value of bucket <paramref name="bucket"/>.</summary>
    internal static long UpperEdgeMicroseconds(int bucket)
    {
        if (bucket < LinearBuckets) return bucket + 1;
        var exponent = (bucket - LinearBuckets) / SubBuckets + FirstExponent;
        var sub = (bucket - LinearBuckets) % SubBuckets;
        return (1L << exponent) + ((long)(sub + 1) << (exponent - SubBucketBits));
    }

    private static long ToMicroseconds(long ticks) => (long)(ticks * (1_000_000.0 / Stopwatch.Frequency));

    private static TimeSpan TicksToTimeSpan(long ticks) => TimeSpan.FromTicks((long)(ticks * ((double)TimeSpan.TicksPerSecond / Stopwatch.Frequency)));
}
