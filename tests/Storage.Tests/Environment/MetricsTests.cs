using System.Diagnostics.Metrics;
using Storage.Tests.Support;

namespace Storage.Tests.EnvironmentTests;

public sealed class Environment_metrics
{
    [Fact]
    public void Report_commits_and_journal_writes_to_a_meter_listener_tagged_with_the_directory()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(dir.Path, TestOptions.Small);
        for (var i = 0; i < 3; i++)
        {
            using var tx = env.BeginWrite();
            tx.OpenOrCreateTree("m").Put([(byte)i], [1, 2, 3]);
            tx.Commit();
        }

        var seen = new Dictionary<string, long>();
        using var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == "Storage" && instrument.Meter.Tags!.Any(t => t.Value as string == env.DirectoryPath)) l.EnableMeasurementEvents(instrument);
        };
        listener.SetMeasurementEventCallback<long>((instrument, value, _, _) => seen[instrument.Name] = value);
        listener.SetMeasurementEventCallback<int>((instrument, value, _, _) => seen[instrument.Name] = value);
        listener.Start();
        listener.RecordObservableInstruments();

        Assert.Equal(3, seen["storage.commits"]);
        Assert.Equal(3, seen["storage.journal.writes"]);
        Assert.True(seen["storage.journal.bytes"] >= 3 * 4096);
        Assert.Equal(0, seen["storage.transactions.active"]);
    }
}
