using System.Buffers.Binary;
using Storage.Tests.Support;

namespace Storage.Tests.RecoveryTests;

/// <summary>
/// A sync writes a header saying "everything up to transaction F is in the data file". That must hold even
/// when transactions after F commit while the flush up to F is collecting page versions (each commit
/// supersedes, and may prune, older versions of the pages it changed): a crash right after such a
/// checkpoint must still recover every commit.
/// </summary>
public sealed class A_checkpoint_racing_with_commits
{
    private const int Keys = 4000;

    [Fact]
    public async Task Leaves_a_data_file_from_which_a_crash_recovers_every_commit()
    {
        using var temp = new TempDirectory("race");
        var options = TestOptions.JournalOnly;
        var model = OrdinalBytes.NewModel();
        using (var env = StorageEnvironment.Open(temp.Path, options))
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            for (var k = 0; k < Keys; k++)
            {
                var key = TestData.Key($"key-{k:D5}");
                var value = TestData.Value(k, 40);
                tree.Put(key, value);
                model[key] = value;
            }
            tx.Commit();
        }

        var random = new Random(12345);
        for (var round = 0; round < 20; round++)
        {
            var env = StorageEnvironment.Open(temp.Path, options);
            using var writerRunning = new ManualResetEventSlim();
            var checkpointDone = false;
            Exception? checkpointFailure = null;
            // One checkpoint per round, while the writer commits; the crash follows right after it.
            var checkpointer = new Thread(() =>
            {
                try
                {
                    writerRunning.Wait();
                    env.Checkpoint();
                }
                catch (Exception e)
                {
                    checkpointFailure = e;
                }
                finally
                {
                    Volatile.Write(ref checkpointDone, true);
                }
            }) { IsBackground = true, Name = "checkpointer" };
            checkpointer.Start();
            var writer = Task.Run(() =>
            {
                for (var i = 1; !Volatile.Read(ref checkpointDone); i++)
                {
                    using var tx = env.BeginWrite();
                    var tree = tx.OpenTree("t");
                    for (var c = 0; c < 20; c++)
                    {
                        var key = TestData.Key($"key-{random.Next(Keys):D5}");
                        var value = new byte[40];
                        BinaryPrimitives.WriteInt64LittleEndian(value, round * 100_000L + i * 100 + c);
                        tree.Put(key, value);
                        model[key] = value;
                    }
                    tx.Commit();
                    if (i >= 5) writerRunning.Set();
                    // The application does some work of its own after Commit, before the using block ends.
                    Thread.SpinWait(20_000);
                }
            }, TestContext.Current.CancellationToken);
            await writer.WaitAsync(TimeSpan.FromSeconds(60), TestContext.Current.CancellationToken);
            Assert.True(checkpointer.Join(TimeSpan.FromSeconds(60)), "the checkpointer did not finish");
            Assert.Null(checkpointFailure);
            env.SimulateCrash();

            var error = await Within.Catch(() =>
            {
                using var reopened = StorageEnvironment.Open(temp.Path, options);
                using var read = reopened.BeginRead();
                TreeAssert.Equal(model, read.OpenTree("t"), $"round {round}, after a crash right after a checkpoint");
            });
            if (error is not null) throw new Xunit.Sdk.XunitException($"Round {round}: {error}");
        }
    }
}

/// <summary>
/// The deterministic form of the race above: after Commit and before Dispose the write transaction still
/// pins its (older) snapshot, so a checkpoint then flushes only up to that snapshot, while the commit has
/// already pruned the older versions of the pages it changed.
/// </summary>
public sealed class A_checkpoint_between_commit_and_dispose_of_the_write_transaction
{
    [Fact]
    public async Task Leaves_a_data_file_from_which_a_crash_recovers_every_commit()
    {
        using var temp = new TempDirectory("race");
        var options = TestOptions.JournalOnly;
        var model = OrdinalBytes.NewModel();
        var env = StorageEnvironment.Open(temp.Path, options);
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("t");
            for (var k = 0; k < 100; k++)
            {
                var key = TestData.Key($"key-{k:D3}");
                tree.Put(key, TestData.Value(k, 30));
                model[key] = TestData.Value(k, 30);
            }
            tx.Commit();
        }

        using (var tx = env.BeginWrite())
        {
            tx.OpenTree("t").Put("key-050"u8, "changed"u8);
            model[TestData.Key("key-050")] = TestData.Value("changed");
            tx.Commit();
            env.Checkpoint();
        }
        env.SimulateCrash();

        var error = await Within.Catch(() =>
        {
            using var reopened = StorageEnvironment.Open(temp.Path, options);
            using var read = reopened.BeginRead();
            TreeAssert.Equal(model, read.OpenTree("t"), "after the crash");
        });
        if (error is not null) throw new Xunit.Sdk.XunitException($"header: {DataFileInspector.NewerHeader(temp.Path)}; {error}");
    }
}
