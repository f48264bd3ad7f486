using Storage.Journal;
using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.JournalTests;

/// <summary>
/// The journal makes its writes durable either with one O_DIRECT|O_DSYNC write or with a buffered write and fdatasync,
/// chosen by measuring both at the start of each journal file; either way an acknowledged commit survives a crash, and a
/// failed sync fails the commit and stops the environment as a failed write does.
/// </summary>
public sealed class JournalWriteMethodTests
{
    [Fact]
    public void The_measurement_takes_the_methods_in_turn_then_keeps_the_one_with_the_lower_median_until_the_next_file()
    {
        var policy = new DurableWritePolicy(JournalWriteMethod.Auto);
        Assert.True(policy.IsMeasuring);
        var taken = new List<JournalWriteMethod>();
        for (var i = 0; i < 2 * DurableWritePolicy.SamplesPerMethod; i++)
        {
            var method = policy.Next();
            taken.Add(method);
            // Buffered writes are faster here, but for two outliers that the median leaves out.
            var ticks = method == JournalWriteMethod.DirectSync ? 300 : (i < 4 ? 5_000 : 200);
            policy.Record(method, ticks);
        }
        Assert.Equal(DurableWritePolicy.SamplesPerMethod, taken.Count(m => m == JournalWriteMethod.DirectSync));
        Assert.Equal(JournalWriteMethod.DirectSync, taken[0]);
        Assert.Equal(JournalWriteMethod.BufferedThenSync, taken[1]);
        Assert.False(policy.IsMeasuring);
        Assert.Equal(JournalWriteMethod.BufferedThenSync, policy.Chosen);
        Assert.Equal(JournalWriteMethod.BufferedThenSync, policy.Next());
        Assert.Equal(1, policy.Snapshot().BufferedThenSyncChosen);

        // The next file measures again, and this time direct writes win.
        policy.StartFile();
        Assert.True(policy.IsMeasuring);
        for (var i = 0; i < 2 * DurableWritePolicy.SamplesPerMethod; i++)
        {
            var method = policy.Next();
            policy.Record(method, method == JournalWriteMethod.DirectSync ? 100 : 400);
        }
        Assert.Equal(JournalWriteMethod.DirectSync, policy.Chosen);
        var stats = policy.Snapshot();
        Assert.Equal((1L, 1L), (stats.DirectSyncChosen, stats.BufferedThenSyncChosen));
        Assert.True(stats.DirectSyncMedian < stats.BufferedThenSyncMedian);
    }

    [Fact]
    public void Buffered_writes_are_chosen_only_when_clearly_faster()
    {
        var policy = new DurableWritePolicy(JournalWriteMethod.Auto);
        // Buffered writes a tenth faster: within a disk's noise, so direct writes stay.
        for (var i = 0; i < 2 * DurableWritePolicy.SamplesPerMethod; i++)
        {
            var method = policy.Next();
            policy.Record(method, method == JournalWriteMethod.DirectSync ? 1_000 : 900);
        }
        Assert.Equal(JournalWriteMethod.DirectSync, policy.Chosen);

        // A fifth faster is a clear win.
        policy.StartFile();
        for (var i = 0; i < 2 * DurableWritePolicy.SamplesPerMethod; i++)
        {
            var method = policy.Next();
            policy.Record(method, method == JournalWriteMethod.DirectSync ? 1_000 : 800);
        }
        Assert.Equal(JournalWriteMethod.BufferedThenSync, policy.Chosen);
    }

    [Theory]
    [InlineData(JournalWriteMethod.DirectSync)]
    [InlineData(JournalWriteMethod.BufferedThenSync)]
    public void A_method_set_in_the_options_is_used_for_every_write_and_never_measured(JournalWriteMethod method)
    {
        var policy = new DurableWritePolicy(method);
        Assert.False(policy.IsMeasuring);
        for (var i = 0; i < 40; i++)
        {
            Assert.Equal(method, policy.Next());
            policy.Record(method, 1_000 * (i + 1));
        }
        policy.StartFile();
        Assert.Equal(method, policy.Next());
        Assert.Equal((0L, 0L), (policy.Snapshot().DirectSyncChosen, policy.Snapshot().BufferedThenSyncChosen));
    }

    [Fact]
    public void Commits_written_through_the_page_cache_and_synced_survive_a_crash()
    {
        using var temp = new TempDirectory();
        var options = TestOptions.JournalOnly with { JournalWriteMethod = JournalWriteMethod.BufferedThenSync };
        var env = StorageEnvironment.Open(temp.Path, options);
        for (var i = 0; i < 50; i++) PutAndCommit(env, "t", ($"k{i:D2}", $"v{i}"));
        Assert.Equal(JournalWriteMethod.BufferedThenSync, env.GetStats().Journal.WriteMethod.Method);
        env.SimulateCrash();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        Assert.Equal(50, reopened.GetStats().Recovery.ReplayedTransactions);
        for (var i = 0; i < 50; i++) Assert.Equal($"v{i}", GetString(reopened, "t", $"k{i:D2}"));
    }

    [Fact]
    public void A_failed_sync_of_a_buffered_journal_write_fails_the_commit_and_poisons_like_a_failed_write()
    {
        using var temp = new TempDirectory("fault");
        var faults = new ScriptedFaults();
        var env = StorageEnvironment.Open(temp.Path, (TestOptions.JournalOnly with { JournalWriteMethod = JournalWriteMethod.BufferedThenSync }).WithFaults(faults));
        for (var i = 0; i < 5; i++) PutAndCommit(env, "t", ($"k{i}", $"v{i}"));

        faults.FailSyncs(ScriptedFaults.IsJournal, ScriptedFaults.Eio);
        using (var tx = env.BeginWrite())
        {
            tx.OpenTree("t").Put("lost"u8, "x"u8);
            var error = Assert.Throws<StorageException>(() => tx.Commit());
            Assert.Equal(StorageErrorCode.IoFailure, error.ErrorCode);
            Assert.EndsWith(".journal", error.Path, StringComparison.Ordinal);
        }
        Assert.Equal(1, faults.Fired);
        Assert.Equal(StorageErrorCode.EnvironmentPoisoned, Assert.Throws<StorageException>(() => env.BeginWrite()).ErrorCode);
        env.Dispose();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        for (var i = 0; i < 5; i++) Assert.Equal($"v{i}", GetString(reopened, "t", $"k{i}"));
    }

    [Fact]
    public void By_default_a_journal_file_measures_both_methods_and_the_statistics_say_what_it_chose()
    {
        using var temp = new TempDirectory();
        // One journal file takes every commit: its first writes are the measurement.
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly with { MinJournalFileSizeBytes = 4 << 20 });
        for (var i = 0; i < 2 * DurableWritePolicy.SamplesPerMethod + 2; i++) PutAndCommit(env, "t", ($"k{i:D2}", $"v{i}"));

        var stats = env.GetStats().Journal.WriteMethod;
        Assert.True(stats.DirectSyncChosen + stats.BufferedThenSyncChosen >= 1, "one file's measurement completed");
        Assert.True(stats.DirectSyncMedian > TimeSpan.Zero && stats.BufferedThenSyncMedian > TimeSpan.Zero);
        // The policy compares the medians in clock ticks; the statistics give them cut to 100 ns units, so a pair that
        // close to the threshold (the cut moves the ratio by up to one unit in each median) may read either way here.
        var percent = 100.0 * stats.BufferedThenSyncMedian.Ticks / stats.DirectSyncMedian.Ticks;
        var resolution = percent * (1.0 / stats.BufferedThenSyncMedian.Ticks + 1.0 / stats.DirectSyncMedian.Ticks);
        if (Math.Abs(percent - DurableWritePolicy.BufferedWinPercent) > Math.Max(0.1, resolution))
        {
            var expected = percent < DurableWritePolicy.BufferedWinPercent ? JournalWriteMethod.BufferedThenSync : JournalWriteMethod.DirectSync;
            Assert.True(expected == stats.Method,
                $"chose {stats.Method} with medians {stats.DirectSyncMedian.TotalMicroseconds} µs direct, {stats.BufferedThenSyncMedian.TotalMicroseconds} µs buffered ({percent:F2}%)");
        }
        for (var i = 0; i < 2 * DurableWritePolicy.SamplesPerMethod + 2; i++) Assert.Equal($"v{i}", GetString(env, "t", $"k{i:D2}"));
    }
}
