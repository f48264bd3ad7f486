using Storage.Tests.Support;

namespace Storage.Tests.JournalTests;

/// <summary>
/// A clean close keeps retired journal files as spares for the next open only while the journal stays within a
/// quarter of the data file: a closed environment's directory stays near its data file.
/// </summary>
public sealed class A_clean_close
{
    private static readonly StorageOptions Options = TestOptions.JournalOnly with
    {
        MinJournalFileSizeBytes = 256 << 10,
        MaxJournalFileSizeBytes = 256 << 10,
    };

    [Fact]
    public void Deletes_spare_journal_files_that_would_take_more_than_a_quarter_of_a_small_data_file()
    {
        using var temp = new TempDirectory();
        using (var env = StorageEnvironment.Open(temp.Path, Options))
        {
            // The same keys again and again: the journal churns through files while the data stays small.
            ChurnUntilSpares(env, distinctKeys: 100);
        }

        Assert.Empty(Spares(temp.Path));
        Assert.True(JournalBytes(temp.Path) <= Math.Max(DataFileBytes(temp.Path) / 4, Options.MaxJournalFileSizeBytes),
            $"journal files take {JournalBytes(temp.Path)} bytes next to a data file of {DataFileBytes(temp.Path)}");
        using var reopened = StorageEnvironment.Open(temp.Path, Options);
        Assert.Equal(100, EnvHelpers.CountOf(reopened, "t"));
        PutValues(reopened, 0, 100, fill: 9);
        Assert.Equal(100, EnvHelpers.CountOf(reopened, "t"));
    }

    [Fact]
    public void Keeps_spare_journal_files_within_a_quarter_of_a_larger_data_file()
    {
        using var temp = new TempDirectory();
        using (var env = StorageEnvironment.Open(temp.Path, Options))
        {
            // 8 MB of distinct values first, then the churn.
            for (int start = 0; start < 8_000; start += 500) PutValues(env, start, 500, fill: 1);
            env.Checkpoint();
            ChurnUntilSpares(env, distinctKeys: 100);
        }

        Assert.NotEmpty(Spares(temp.Path));
        Assert.True(JournalBytes(temp.Path) <= DataFileBytes(temp.Path) / 4);
        using var reopened = StorageEnvironment.Open(temp.Path, Options);
        Assert.Equal(8_000, EnvHelpers.CountOf(reopened, "t"));
    }

    [Fact]
    public void Leaves_a_journal_file_of_the_smallest_size_not_the_largest_the_load_needed()
    {
        using var temp = new TempDirectory();
        var options = TestOptions.JournalOnly with { MinJournalFileSizeBytes = 64 << 10, MaxJournalFileSizeBytes = 4 << 20 };
        using (var env = StorageEnvironment.Open(temp.Path, options))
        {
            // The journal grows to 4 MiB files while the data stays at a few hundred KiB.
            for (var round = 0; round < 60; round++) PutValues(env, 0, 100, fill: (byte)round);
            Assert.True(Directory.GetFiles(Path.Combine(temp.Path, "Journals"), "*.journal").Max(f => new FileInfo(f).Length) >= options.MaxJournalFileSizeBytes,
                "the journal reached its largest file size");
        }
        var journals = Directory.GetFiles(Path.Combine(temp.Path, "Journals"), "*.journal");
        Assert.Single(journals);
        Assert.Equal(options.MinJournalFileSizeBytes, new FileInfo(journals[0]).Length);
        Assert.True(JournalBytes(temp.Path) <= Math.Max(DataFileBytes(temp.Path) / 4, 2 * options.MinJournalFileSizeBytes),
            $"journal files take {JournalBytes(temp.Path)} bytes next to a data file of {DataFileBytes(temp.Path)}");
        for (var reopen = 0; reopen < 2; reopen++)
        {
            using var env = StorageEnvironment.Open(temp.Path, options);
            Assert.Equal(reopen == 0 ? 100 : 110, EnvHelpers.CountOf(env, "t"));
            Assert.Equal(0, env.GetStats().Recovery.ReplayedTransactions);
            PutValues(env, 100, 10, fill: (byte)reopen);
        }
        using var last = StorageEnvironment.Open(temp.Path, options);
        Assert.Equal(110, EnvHelpers.CountOf(last, "t"));
    }

    private static void ChurnUntilSpares(StorageEnvironment env, int distinctKeys)
    {
        for (int round = 0; round < 40; round++)
        {
            PutValues(env, 0, distinctKeys, fill: (byte)round);
            if (round % 3 == 2) env.Checkpoint();
        }
        // Retired files became spares: what the close then decides about.
        Assert.True(Spares(env.DirectoryPath).Length > 0, string.Join(", ", Directory.GetFiles(Path.Combine(env.DirectoryPath, "Journals")).Select(f => Path.GetFileName(f) + ":" + new FileInfo(f).Length)));
    }

    private static void PutValues(StorageEnvironment env, int start, int count, byte fill)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("t");
        var random = new Random(fill * 100_000 + start);
        var value = new byte[1000];
        for (int i = start; i < start + count; i++)
        {
            // Incompressible: the journal carries every byte.
            random.NextBytes(value);
            tree.Put(System.Text.Encoding.ASCII.GetBytes($"key{i:D6}"), value);
        }
        tx.Commit();
    }

    private static string[] Spares(string directory) => Directory.GetFiles(Path.Combine(directory, "Journals"), "*.spare");

    private static long JournalBytes(string directory) =>
        Directory.GetFiles(Path.Combine(directory, "Journals")).Sum(f => new FileInfo(f).Length);

    private static long DataFileBytes(string directory) => new FileInfo(Path.Combine(directory, "data.storage")).Length;
}
