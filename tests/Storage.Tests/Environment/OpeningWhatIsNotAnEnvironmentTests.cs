using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.EnvironmentTests;

public sealed class Opening_something_that_is_not_a_whole_environment
{
    [Fact]
    public void A_path_that_is_a_file_fails_with_NotAnEnvironment_and_the_file_is_untouched()
    {
        using var temp = new TempDirectory();
        var path = temp.Combine("a-file");
        File.WriteAllText(path, "not an environment");

        var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(path, TestOptions.Small));

        Assert.Equal(StorageErrorCode.NotAnEnvironment, error.ErrorCode);
        Assert.Equal(Path.GetFullPath(path), error.Path);
        Assert.Equal("not an environment", File.ReadAllText(path));
    }

    [Fact]
    public void A_data_file_that_is_a_directory_fails_with_NotAnEnvironment()
    {
        using var temp = new TempDirectory();
        Directory.CreateDirectory(temp.Combine("data.storage"));

        var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(temp.Path, TestOptions.Small));

        Assert.Equal(StorageErrorCode.NotAnEnvironment, error.ErrorCode);
        Assert.EndsWith("data.storage", error.Path, StringComparison.Ordinal);
        Assert.True(Directory.Exists(temp.Combine("data.storage")));
    }

    [Fact]
    public void A_journal_folder_that_is_a_file_fails_with_NotAnEnvironment()
    {
        using var temp = new TempDirectory();
        using (StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
        }
        Directory.Delete(temp.Combine("Journals"), recursive: true);
        File.WriteAllText(temp.Combine("Journals"), "x");

        var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(temp.Path, TestOptions.Small));

        Assert.Equal(StorageErrorCode.NotAnEnvironment, error.ErrorCode);
        Assert.EndsWith("Journals", error.Path, StringComparison.Ordinal);
    }

    [Fact]
    public void Journals_without_a_data_file_fail_with_StorageCorruptedException_and_every_journal_file_is_kept()
    {
        using var temp = new TempDirectory();
        var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly);
        for (var i = 0; i < 20; i++) PutAndCommit(env, "t", ($"k{i}", $"v{i}"));
        env.SimulateCrash();
        File.Delete(temp.Combine("data.storage"));
        var journals = JournalInspector.Files(temp.Path).Select(f => (f.Path, Hash: DataFileInspector.Hash(f.Path))).ToList();
        Assert.NotEmpty(journals);

        var error = Assert.Throws<StorageCorruptedException>(() => StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly));

        Assert.Contains("no data file", error.Message, StringComparison.Ordinal);
        Assert.False(File.Exists(temp.Combine("data.storage")), "no new environment was created over the journals");
        foreach (var (path, hash) in journals) Assert.Equal(hash, DataFileInspector.Hash(path));
        // Again: a failed open changes nothing.
        Assert.Throws<StorageCorruptedException>(() => StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly));
    }

    [Fact]
    public void A_creation_interrupted_after_the_first_journal_file_was_put_in_place_is_finished_on_the_next_open()
    {
        using var temp = new TempDirectory();
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
        }
        // What a crash between the first journal file and the rename of the new data file leaves.
        File.Move(temp.Combine("data.storage"), temp.Combine("data.storage.new"));

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            PutAndCommit(env, "t", ("k", "v"));
        }
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            Assert.Equal("v", GetString(env, "t", "k"));
        }
        Assert.False(File.Exists(temp.Combine("data.storage.new")));
    }

    [Fact]
    public void A_damaged_current_header_whose_older_slot_lost_its_journal_is_named_in_the_error()
    {
        using var temp = new TempDirectory();
        var options = TestOptions.JournalOnly with { MinJournalFileSizeBytes = 64 << 10, MaxJournalFileSizeBytes = 64 << 10 };
        var env = StorageEnvironment.Open(temp.Path, options);
        PutAndCommit(env, "t", ("first", "1"));
        env.Checkpoint();
        // Enough commits to fill several journal files, then a sync that retires the files the older header needs.
        for (var i = 0; i < 60; i++) PutAndCommit(env, "t", ($"k{i:D3}", new string('x', 1500)));
        env.Checkpoint();
        // The flusher may have synced on its own during those commits (they passed its journal-bytes threshold), and that
        // header may name the file still in use. So into a new file, too few bytes for the flusher to act on, and one
        // more sync: the older header is then the checkpoint's above, whose file that sync retires.
        for (var i = 0; i < 20; i++) PutAndCommit(env, "t", ($"m{i:D3}", new string('y', 1500)));
        env.Checkpoint();
        env.SimulateCrash();
        var newer = DataFileInspector.NewerHeader(temp.Path);
        DataFileInspector.FlipByte(temp.Path, newer.Slot * DataFileInspector.PageBytes + 200);

        var error = Assert.Throws<StorageCorruptedException>(() => StorageEnvironment.Open(temp.Path, options));

        Assert.Contains($"File header slot {newer.Slot}", error.Message, StringComparison.Ordinal);
        Assert.Equal(newer.Slot, error.PageNumber);
        Assert.Equal(Path.GetFullPath(DataFileInspector.PathOf(temp.Path)), error.Path);
    }
}
