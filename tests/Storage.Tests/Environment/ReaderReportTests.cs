using System.Diagnostics.Metrics;
using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.EnvironmentTests;

/// <summary>Options where nothing runs in the background unless a test asks (the reader check included).</summary>
internal static class QuietOptions
{
    public static StorageOptions Value { get; } = TestOptions.JournalOnly;
}

public sealed class The_oldest_reader
{
    [Fact]
    public void Is_reported_in_the_stats_with_its_age_snapshot_and_the_scratch_it_pins()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, QuietOptions.Value);
        PutAndCommit(env, "t", ("a", "1"));
        var none = env.GetStats();
        Assert.Equal(0, none.Readers.OldestTransactionId);
        Assert.Equal(TimeSpan.Zero, none.Readers.OldestAge);
        Assert.Equal(0, none.Memory.PinnedBytes);

        var older = env.BeginRead();
        PutAndCommit(env, "t", ("a", "2"));
        using var newer = env.BeginRead();
        for (var i = 0; i < 10; i++) PutAndCommit(env, "t", ("a", $"v{i}"), ($"k{i}", new string('x', 500)));

        var held = env.GetStats();
        Assert.Equal(older.TransactionId, held.Readers.OldestTransactionId);
        Assert.True(held.Readers.OldestAge > TimeSpan.Zero);
        // Pages the later commits changed: the versions the readers see, and every newer version the flusher may not write.
        Assert.True(held.Memory.PinnedBytes >= 2 * 8192, $"pinned {held.Memory.PinnedBytes}");
        Assert.True(held.Memory.PinnedBytes <= held.Memory.ScratchBytes);

        older.Dispose();
        Assert.Equal(newer.TransactionId, env.GetStats().Readers.OldestTransactionId);
        newer.Dispose();
        var after = env.GetStats();
        Assert.Equal(0, after.Readers.OldestTransactionId);
        Assert.Equal(0, after.Memory.PinnedBytes);
    }

    [Fact]
    public void Is_reported_to_a_meter_listener()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, QuietOptions.Value);
        PutAndCommit(env, "t", ("a", "1"));
        using var reader = env.BeginRead();
        PutAndCommit(env, "t", ("a", "2"));

        var seen = new Dictionary<string, double>();
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == "Storage" && instrument.Meter.Tags!.Any(t => t.Value as string == env.DirectoryPath)) l.EnableMeasurementEvents(instrument);
        };
        listener.SetMeasurementEventCallback<long>((instrument, value, _, _) => seen[instrument.Name] = value);
        listener.SetMeasurementEventCallback<int>((instrument, value, _, _) => seen[instrument.Name] = value);
        listener.SetMeasurementEventCallback<double>((instrument, value, _, _) => seen[instrument.Name] = value);
        listener.Start();
        listener.RecordObservableInstruments();

        Assert.True(seen["storage.readers.oldest.age"] > 0);
        Assert.True(seen["storage.readers.pinned.bytes"] > 0);
        Assert.Equal(0, seen["storage.readers.warnings"]);
        Assert.Equal(0, seen["storage.readers.ended"]);
        Assert.Equal(0, seen["storage.commits.refused"]);
        Assert.Equal(0, seen["storage.scratch.spilled.bytes"]);
        Assert.Equal(0, seen["storage.transactions.leaked"]);
    }

    [Fact]
    public async Task Past_the_warning_age_is_reported_once_to_the_callback_and_counted()
    {
        using var dir = new TempDirectory();
        var warnings = new List<ReaderWarning>();
        var warned = new TaskCompletionSource<ReaderWarning>(TaskCreationOptions.RunContinuationsAsynchronously);
        var options = TestOptions.Small with
        {
            FlushInterval = TimeSpan.FromMilliseconds(5),
            ReaderWarningAge = TimeSpan.Zero,
            OnReaderWarning = warning =>
            {
                lock (warnings) warnings.Add(warning);
                warned.TrySetResult(warning);
            },
        };
        using var env = StorageEnvironment.Open(dir.Path, options);
        PutAndCommit(env, "t", ("a", "1"));
        using var reader = env.BeginRead();

        var warning = await warned.Task.WaitAsync(Within.Default, TestContext.Current.CancellationToken);

        Assert.Equal(reader.TransactionId, warning.TransactionId);
        Assert.False(warning.LimitReached);
        Assert.Equal(ReaderLimitPolicy.None, warning.Policy);
        Assert.Null(warning.BeganAt);
        // The flusher keeps checking; the same reader is not reported again.
        env.Checkpoint();
        env.ReaderMonitor.CheckNow();
        lock (warnings) Assert.Single(warnings);
        Assert.Equal(1, env.GetStats().Readers.Warnings);
    }

    [Fact]
    public void Past_the_pinned_bytes_warning_says_where_it_was_begun_when_stacks_are_tracked()
    {
        using var dir = new TempDirectory();
        ReaderWarning? warning = null;
        var options = QuietOptions.Value with
        {
            ReaderWarningPinnedBytes = 100 << 10,
            TrackTransactionStacks = true,
            OnReaderWarning = w => warning = w,
        };
        using var env = StorageEnvironment.Open(dir.Path, options);
        PutAndCommit(env, "t", ("a", "1"));
        using var reader = BeginReaderHere(env);

        PutAndCommit(env, "t", ("a", "2"));
        env.ReaderMonitor.CheckNow();
        Assert.Null(warning);
        for (var i = 0; i < 40; i++) PutAndCommit(env, "t", ($"k{i:D3}", new string('x', 3000)));
        env.ReaderMonitor.CheckNow();

        Assert.NotNull(warning);
        Assert.True(warning.Value.PinnedBytes >= 100 << 10);
        Assert.Contains(nameof(BeginReaderHere), warning.Value.BeganAt);
    }

    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static ReadTransaction BeginReaderHere(StorageEnvironment env) => env.BeginRead();
}
