namespace Storage.Benchmarks.Measurement;

/// <summary>Count, mean, max and population standard deviation of a stream of numbers (Welford), without storing them.</summary>
internal sealed class RunningStatistics
{
    private double _sumOfSquaredDeviations;

    public long Count { get; private set; }

    public double Mean { get; private set; }

    public double Max { get; private set; } = double.NegativeInfinity;

    public double StandardDeviation => Count == 0 ? 0 : Math.Sqrt(_sumOfSquaredDeviations / Count);

    public void Add(double sample)
    {
        Count++;
        var delta = sample - Mean;
        Mean += delta / Count;
        _sumOfSquaredDeviations += delta * (sample - Mean);
        if (sample > Max) Max = sample;
    }
}
