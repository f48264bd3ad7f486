using System.Diagnostics;
using System.Diagnostics.Metrics;
using Storage.Diagnostics;
using Storage.Tests.Support;

namespace Storage.Tests.DiagnosticsTests;

public sealed class A_latency_histogram
{
    [Fact]
    public void Puts_every_value_in_a_bucket_that_holds_it_and_is_at_most_a_32nd_of_its_value_wide()
    {
        var values = new List<long>();
        for (long v = 0; v < 5_000; v++) values.Add(v);
        for (var shift = 12; shift < 62; shift++)
        {
            var power = 1L << shift;
            values.AddRange([power - 1, power, power + 1, power + power / 3]);
        }
        foreach (var value in values)
        {
            var bucket = LatencyHistogram.BucketOf(value);
            var upper = LatencyHistogram.UpperEdgeMicroseconds(bucket);
            var lower = bucket == 0 ? 0 : LatencyHistogram.UpperEdgeMicroseconds(bucket - 1);
            Assert.True(lower <= value && value < upper, $"{value} is not in bucket {bucket} [{lower}, {upper})");
            Assert.True(upper - lower <= Math.Max(1, value / 32 + 1), $"bucket {bucket} of {value} is [{lower}, {upper})");
        }
    }

    [Fact]
    public void Summarizes_percentiles_within_a_bucket_and_the_exact_maximum()
    {
        var histogram = new LatencyHistogram();
        // 1..1000 microseconds, once each.
        for (var us = 1; us <= 1_000; us++) histogram.Record(us * Stopwatch.Frequency / 1_000_000);
        var summary = histogram.Summarize();
        Assert.Equal(1_000, summary.Count);
        AssertNear(500, summary.P50.TotalMicroseconds);
        AssertNear(990, summary.P99.TotalMicroseconds);
        AssertNear(1_000, summary.Max.TotalMicroseconds);
        AssertNear(500.5, summary.Mean.TotalMicroseconds);
        Assert.True(summary.P99 <= summary.Max);
    }

    [Fact]
    public void Of_nothing_is_all_zero() => Assert.Equal(default, new LatencyHistogram().Summarize());

    private static void AssertNear(double expected, double actual) =>
        Assert.True(Math.Abs(actual - expected) <= expected * 0.04 + 1, $"expected about {expected}, got {actual}");
}

public sealed class The_commit_profile
{
    [Fact]
    public void Counts_every_commit_that_wrote_and_its_phases_add_up_to_no_more_than_the_time_taken()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        var clock = Stopwatch.StartNew();
        for (var i = 0; i < 20; i++)
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenOrCreateTree("p");
            for (var k = 0; k < 50; k++) tree.Put(TestData.Key($"{i}-{k}"), TestData.Value(new string('v', 80)));
            tx.Commit();
        }
        using (var empty = env.BeginWrite()) empty.Commit(); // writes nothing: not counted
        var elapsed = clock.Elapsed;

        var stats = env.GetStats();
        var phases = stats.Commits.Phases;
        Assert.Equal(20, phases.Transactions);
        Assert.Equal(20, stats.Commits.Latency.Count);
        Assert.Equal(20, stats.Journal.WriteLatency.Count);
        Assert.True(phases.DurableWrites > TimeSpan.Zero);
        Assert.True(phases.TransactionBody > TimeSpan.Zero);
        Assert.True(phases.Diffs > TimeSpan.Zero);
        Assert.True(phases.Checksums > TimeSpan.Zero);
        Assert.True(phases.PageCopies <= phases.TransactionBody);
        Assert.True(phases.PruneLockWait <= phases.Publish);
        var total = phases.WriteLockWait + phases.TransactionBody + phases.Checksums + phases.Diffs + phases.EntryFinish
            + phases.JournalSwitches + phases.DurableWrites + phases.Publish;
        Assert.True(total <= elapsed, $"phases {total} > elapsed {elapsed}");
        Assert.True(stats.Journal.WriteLatency.Max <= stats.Commits.Latency.Max);
        Assert.True(stats.Commits.Latency.P50 <= stats.Commits.Latency.P99 && stats.Commits.Latency.P99 <= stats.Commits.Latency.Max);
    }

    [Fact]
    public void Records_each_commit_in_the_duration_histograms_of_a_meter_listener()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        var commits = new List<double>();
        var writes = new List<double>();
        var phases = new Dictionary<string, double>();
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == "Storage" && instrument.Meter.Tags!.Any(t => t.Value as string == env.DirectoryPath)) l.EnableMeasurementEvents(instrument);
        };
        listener.SetMeasurementEventCallback<double>((instrument, value, tags, _) =>
        {
            lock (commits)
            {
                if (instrument.Name == "storage.commit.duration") commits.Add(value);
                else if (instrument.Name == "storage.journal.write.duration") writes.Add(value);
                else if (instrument.Name == "storage.commit.phase.time") phases[(string)tags[0].Value!] = value;
            }
        });
        listener.Start();
        for (var i = 0; i < 3; i++)
        {
            using var tx = env.BeginWrite();
            tx.OpenOrCreateTree("m").Put([(byte)i], [1, 2, 3]);
            tx.Commit();
        }
        listener.RecordObservableInstruments();

        lock (commits)
        {
            Assert.Equal(3, commits.Count);
            Assert.Equal(3, writes.Count);
            Assert.All(commits, c => Assert.True(c > 0));
            for (var i = 0; i < 3; i++) Assert.True(writes[i] <= commits[i]);
            Assert.True(phases["durable_writes"] > 0);
            Assert.Equal(10, phases.Count);
        }
    }
}
