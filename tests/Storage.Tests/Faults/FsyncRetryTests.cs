using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.FaultTests;

public sealed class A_failed_checkpoint_fsync_in_a_busy_environment
{
    /// <summary>
    /// The flusher keeps looping after a checkpoint fails and poisons the environment. Its next sync would
    /// succeed (Linux reports a writeback error once, then forgets it) and it would write a header claiming the
    /// unwritten pages durable and retire the journal that still holds them. The data file writer's first failure
    /// is final, so that sync never happens.
    /// </summary>
    [Fact]
    public void Is_not_retried_by_the_background_flusher_and_no_header_follows_it()
    {
        for (var setup = 0; ; setup++)
        {
            using var temp = new TempDirectory("retry");
            var faults = new ScriptedFaults();
            var env = StorageEnvironment.Open(temp.Path, TestOptions.Busy.WithFaults(faults));
            try
            {
                for (var i = 0; i < 6; i++) PutAndCommit(env, "t", ($"k{i}", $"v{i}"));
                // Only the checkpoint's own sync (this thread) fails; the flusher's, if it gets there first, does not.
                faults.FailSyncs(ScriptedFaults.IsDataFile, ScriptedFaults.Eio);
                try
                {
                    env.Checkpoint();
                }
                catch (StorageException e) when (e.ErrorCode == StorageErrorCode.IoFailure)
                {
                    var failedAt = faults.Log.ToList().FindIndex(line => line.StartsWith("  -> injected", StringComparison.Ordinal));
                    Assert.Equal(StorageErrorCode.EnvironmentPoisoned, Assert.Throws<StorageException>(() => env.BeginWrite()).ErrorCode);
                    // Something that must never happen has no event to wait for: watch the flusher, which wakes
                    // every millisecond here, for a while (it retried at once before the fix), then stop it.
                    var synced = SpinWait.SpinUntil(() => LaterDataFileSyncOrHeader(faults, failedAt) is not null, TimeSpan.FromMilliseconds(300));
                    env.Dispose();
                    Assert.False(synced, $"after the failed fsync: {LaterDataFileSyncOrHeader(faults, failedAt)}");
                    Assert.Null(LaterDataFileSyncOrHeader(faults, failedAt));
                    using var reopened = StorageEnvironment.Open(temp.Path, TestOptions.Small);
                    for (var i = 0; i < 6; i++) Assert.Equal($"v{i}", GetString(reopened, "t", $"k{i}"));
                    return;
                }
                // The flusher had synced everything before the checkpoint: nothing failed. Set up again.
                Assert.True(setup < 20, "the checkpoint never had anything left to sync");
            }
            finally
            {
                env.Dispose();
            }
        }
    }

    private static string? LaterDataFileSyncOrHeader(ScriptedFaults faults, int after) =>
        faults.Log.Skip(after + 1).FirstOrDefault(line =>
            line.StartsWith("sync data.storage ", StringComparison.Ordinal)
            || line.StartsWith("write data.storage @0 ", StringComparison.Ordinal)
            || line.StartsWith("write data.storage @8192 ", StringComparison.Ordinal));
}
