using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.FaultTests;

public sealed class A_failed_data_file_fsync_during_checkpoint
{
    [Fact]
    public void Fails_the_checkpoint_poisons_writes_and_a_reopen_recovers_everything()
    {
        using var temp = new TempDirectory("fsync");
        var faults = new ScriptedFaults();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly.WithFaults(faults));
        var model = OrdinalBytes.NewModel();
        for (var i = 0; i < 20; i++)
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenOrCreateTree("t");
            for (var k = 0; k < 20; k++)
            {
                var key = TestData.Key($"k{i:D2}-{k:D2}");
                var value = TestData.Value(i * 100 + k, 200);
                tree.Put(key, value);
                model[key] = value;
            }
            tx.Commit();
        }
        faults.FailSyncs(ScriptedFaults.IsDataFile, ScriptedFaults.Eio);

        var error = Assert.Throws<StorageException>(env.Checkpoint);

        Assert.Equal(StorageErrorCode.IoFailure, error.ErrorCode);
        Assert.Equal(1, faults.Fired);
        var poisoned = Assert.Throws<StorageException>(() => env.BeginWrite());
        Assert.Equal(StorageErrorCode.EnvironmentPoisoned, poisoned.ErrorCode);
        Assert.Contains("reopen", poisoned.Message, StringComparison.OrdinalIgnoreCase);
        using (var read = env.BeginRead())
        {
            TreeAssert.Equal(model, read.OpenTree("t"), "reads after the failure");
        }
        env.Dispose();
        // The header was not advanced past what was synced.
        Assert.Equal(0, DataFileInspector.NewerHeader(temp.Path).LastSyncedTransactionId);

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        Assert.Equal(20, reopened.GetStats().Recovery.ReplayedTransactions);
        using (var read = reopened.BeginRead())
        {
            TreeAssert.Equal(model, read.OpenTree("t"), "after reopening");
        }
        PutAndCommit(reopened, "t", ("new", "write"));
    }

    [Fact]
    public void A_failed_data_file_write_during_checkpoint_also_poisons_and_recovers()
    {
        using var temp = new TempDirectory("fsync");
        var faults = new ScriptedFaults();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly.WithFaults(faults));
        for (var i = 0; i < 10; i++) PutAndCommit(env, "t", ($"k{i}", $"v{i}"));
        faults.FailWrites((path, _, _) => ScriptedFaults.IsDataFile(path), ScriptedFaults.Eio);

        Assert.Equal(StorageErrorCode.IoFailure, Assert.Throws<StorageException>(env.Checkpoint).ErrorCode);
        Assert.Equal(StorageErrorCode.EnvironmentPoisoned, Assert.Throws<StorageException>(() => env.BeginWrite()).ErrorCode);
        env.Dispose();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        for (var i = 0; i < 10; i++) Assert.Equal($"v{i}", GetString(reopened, "t", $"k{i}"));
    }

    [Fact]
    public void A_failed_fsync_in_the_background_flusher_poisons_the_environment_and_a_reopen_recovers()
    {
        using var temp = new TempDirectory("fsync");
        var faults = new ScriptedFaults();
        faults.FailSyncs(ScriptedFaults.IsDataFile, ScriptedFaults.Eio, once: false, thisThreadOnly: false);
        var env = StorageEnvironment.Open(temp.Path, (TestOptions.Small with { FlushInterval = TimeSpan.FromMilliseconds(5), SyncInterval = TimeSpan.FromMilliseconds(5) }).WithFaults(faults));
        PutAndCommit(env, "t", ("a", "1"));

        // The flusher runs on its own; wait (bounded) until its failure stops writes.
        var poisoned = SpinWait.SpinUntil(() =>
        {
            try
            {
                using var tx = env.BeginWrite(TimeSpan.FromSeconds(5));
                return false;
            }
            catch (StorageException e) when (e.ErrorCode == StorageErrorCode.EnvironmentPoisoned)
            {
                return true;
            }
        }, TimeSpan.FromSeconds(30));
        Assert.True(poisoned, "the flusher's failed fsync did not stop writes");
        Assert.Equal("1", GetString(env, "t", "a"));
        faults.Clear();
        env.Dispose();

        using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        Assert.Equal("1", GetString(reopened, "t", "a"));
    }
}
