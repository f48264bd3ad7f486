using Storage.Tests.Support;

namespace Storage.Tests.JournalTests;

/// <summary>
/// A new journal file is written whole once (zeros over its reserved blocks, so that commits overwrite written blocks
/// and no commit pays for converting them); a retired file is renamed for reuse instead. A steady load that syncs
/// every few files must reuse what it retires, not write new files.
/// </summary>
public sealed class A_steady_load
{
    private const int FileBytes = 256 << 10;

    [Fact]
    public void Reuses_retired_journal_files_instead_of_writing_new_ones()
    {
        using var temp = new TempDirectory();
        var faults = new ScriptedFaults();
        var options = (TestOptions.JournalOnly with
        {
            MinJournalFileSizeBytes = FileBytes,
            MaxJournalFileSizeBytes = FileBytes,
        }).WithFaults(faults);
        using var env = StorageEnvironment.Open(temp.Path, options);

        var round = 0;
        var createdAfterWarmUp = 0;
        for (var cycle = 0; cycle < 12; cycle++)
        {
            if (cycle == 4) createdAfterWarmUp = NewFilesWritten(faults);
            // Three files filled and a fourth begun, then everything flushed and synced, which retires the three.
            while (env.GetStats().Journal.Files < 4) PutValues(env, round++);
            env.Checkpoint();
        }

        Assert.True(round >= 24, $"only {round} commits");
        Assert.True(createdAfterWarmUp > 0, "the first cycles wrote new files");
        Assert.Equal(createdAfterWarmUp, NewFilesWritten(faults));
        using var tx = env.BeginRead();
        Assert.Equal(100, tx.OpenTree("t").Count);
    }

    /// <summary>New files written whole: a spare's write from offset 0 of more than its header (the native layer writes it in one call, the managed one in chunks).</summary>
    private static int NewFilesWritten(ScriptedFaults faults) =>
        faults.Log.Count(line => line.StartsWith("write spare-", StringComparison.Ordinal) && line.Contains(" @0 +", StringComparison.Ordinal) && !line.Contains(" @0 +4096 ", StringComparison.Ordinal));

    private static void PutValues(StorageEnvironment env, int round)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("t");
        var random = new Random(round);
        var value = new byte[1000];
        for (var i = 0; i < 100; i++)
        {
            // Incompressible: the journal carries every byte.
            random.NextBytes(value);
            tree.Put(System.Text.Encoding.ASCII.GetBytes($"key{i:D6}"), value);
        }
        tx.Commit();
    }
}
