using Storage.Tests.Support;

namespace Storage.Tests.FaultTests;

public sealed class A_failed_directory_sync_after_a_journal_switch_renames_the_next_file
{
    /// <summary>
    /// The commit fails on the directory sync after a spare was renamed to journal N; the environment goes on, later
    /// commits go to journal N+1, and the end marker in the file before N points past it, so recovery follows it.
    /// </summary>
    [Fact]
    public void Leaves_every_later_acknowledged_commit_recoverable()
    {
        using var temp = new TempDirectory("switch");
        var faults = new ScriptedFaults();
        var journals = JournalInspector.Directory(temp.Path);
        // The committing thread's first directory sync once a second journal file exists: the one that makes the
        // rename of the second switch durable.
        faults.FailSyncs(path => path == journals && Directory.GetFiles(journals, "*.journal").Length == 2, ScriptedFaults.Eio);
        var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly.WithFaults(faults));
        var model = OrdinalBytes.NewModel();
        StorageException? failure = null;
        var afterFailure = 0;
        // A few commits fill the first 64 KiB journal; the next needs a switch, whose directory sync fails; three
        // more go to the next file. Few enough that nothing is synced or retired before the crash.
        for (var i = 0; afterFailure < 3; i++)
        {
            var key = TestData.Key($"k{i:D2}");
            var value = TestData.Value(i + 1, 20_000);
            try
            {
                using var tx = env.BeginWrite();
                tx.OpenOrCreateTree("t").Put(key, value);
                tx.Commit();
                model[key] = value;
                if (failure is not null) afterFailure++;
            }
            catch (StorageException e) when (e.ErrorCode == StorageErrorCode.IoFailure && failure is null)
            {
                failure = e;
            }
        }
        Assert.Equal(1, faults.Fired);
        Assert.True(model.Count >= 4, $"{model.Count} commits: some before the failed switch and three after it");
        Assert.Equal(journals, failure!.Path);
        env.SimulateCrash();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        using var read = reopened.BeginRead();
        TreeAssert.Equal(model, read.OpenTree("t"), "every acknowledged commit after reopening");
    }
}
