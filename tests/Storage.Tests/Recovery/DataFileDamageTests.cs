using Storage.Tests.Support;

namespace Storage.Tests.RecoveryTests;

/// <summary>Builds an environment whose tree "t" holds Expected(count) and whose headers are both valid.</summary>
internal static class DataFileFixture
{
    public static SortedDictionary<byte[], byte[]> Expected(int transactions)
    {
        var model = OrdinalBytes.NewModel();
        for (var t = 1; t <= transactions; t++)
        {
            for (var k = 0; k < 50; k++) model[TestData.Key($"k{t:D3}-{k:D3}")] = TestData.Value(t * 100 + k, k == 0 ? 2040 : 100);
        }
        return model;
    }

    public static void Commit(StorageEnvironment env, int t)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("t");
        for (var k = 0; k < 50; k++) tree.Put(TestData.Key($"k{t:D3}-{k:D3}"), TestData.Value(t * 100 + k, k == 0 ? 2040 : 100));
        tx.Commit();
    }

    public static void CheckContent(StorageEnvironment env, int transactions, string context)
    {
        using var tx = env.BeginRead();
        TreeAssert.Equal(Expected(transactions), tx.OpenTree("t"), context);
    }
}

public sealed class A_damaged_file_header
{
    private static readonly StorageOptions Options = TestOptions.JournalOnly with { MinJournalFileSizeBytes = 1 << 20, MaxJournalFileSizeBytes = 4 << 20 };

    /// <summary>
    /// Transactions 1..3 synced (older header), 4..6 synced (newer header), 7..8 only in the journal. The journal
    /// still holds everything after the older header, as it does when the newer header's write is torn.
    /// </summary>
    private static string Build(TempDirectory temp)
    {
        var dir = temp.Combine("env");
        var env = StorageEnvironment.Open(dir, Options);
        for (var t = 1; t <= 3; t++) DataFileFixture.Commit(env, t);
        env.Checkpoint();
        for (var t = 4; t <= 6; t++) DataFileFixture.Commit(env, t);
        env.Checkpoint();
        for (var t = 7; t <= 8; t++) DataFileFixture.Commit(env, t);
        env.SimulateCrash();
        Assert.Equal(6, DataFileInspector.NewerHeader(dir).LastSyncedTransactionId);
        Assert.Equal(3, DataFileInspector.OlderHeader(dir).LastSyncedTransactionId);
        return dir;
    }

    [Fact]
    public async Task Newer_slot_damaged_opens_from_the_older_slot_and_replays_the_journal_to_the_last_commit()
    {
        using var temp = new TempDirectory("header");
        var dir = Build(temp);
        var newer = DataFileInspector.NewerHeader(dir);
        DataFileInspector.FlipByte(dir, newer.Slot * DataFileInspector.PageBytes + DataFileInspector.PageHeaderBytes + 33);

        await Within.Run(() =>
        {
            using var env = StorageEnvironment.Open(dir, Options);
            Assert.Equal(8, env.GetStats().LastTransactionId);
            DataFileFixture.CheckContent(env, 8, "opened from the older header");
        });
        // Recovery wrote a good header again.
        await Within.Run(() =>
        {
            using var env = StorageEnvironment.Open(dir, Options);
            DataFileFixture.CheckContent(env, 8, "reopened");
        });
    }

    [Fact]
    public async Task Older_slot_damaged_opens_from_the_newer_slot()
    {
        using var temp = new TempDirectory("header");
        var dir = Build(temp);
        var older = DataFileInspector.OlderHeader(dir);
        DataFileFixture_Zero(dir, older.Slot);

        await Within.Run(() =>
        {
            using var env = StorageEnvironment.Open(dir, Options);
            DataFileFixture.CheckContent(env, 8, "opened from the newer header");
        });
    }

    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    public async Task Either_slot_damaged_in_a_cleanly_closed_environment_opens_with_everything(int slot)
    {
        using var temp = new TempDirectory("header");
        var dir = temp.Combine("env");
        using (var env = StorageEnvironment.Open(dir, TestOptions.Small))
        {
            for (var t = 1; t <= 4; t++) DataFileFixture.Commit(env, t);
        }
        using (var env = StorageEnvironment.Open(dir, TestOptions.Small))
        {
            DataFileFixture.Commit(env, 5);
        }
        DataFileInspector.FlipByte(dir, slot * DataFileInspector.PageBytes + 100);

        var error = await Within.Catch(() =>
        {
            using var env = StorageEnvironment.Open(dir, TestOptions.Small);
            DataFileFixture.CheckContent(env, 5, $"slot {slot} damaged");
        });

        // Opening from the other slot must give the whole state; refusing with a typed error is acceptable only as corruption.
        if (error is not null && error is not StorageCorruptedException) throw new Xunit.Sdk.XunitException($"Expected a StorageCorruptedException, got {error}");
    }

    [Fact]
    public async Task Newer_slot_damaged_after_its_journal_was_retired_is_reported_or_recovered_never_shown_half_way()
    {
        using var temp = new TempDirectory("header");
        var dir = temp.Combine("env");
        var small = TestOptions.JournalOnly with { MinJournalFileSizeBytes = 64 << 10, MaxJournalFileSizeBytes = 64 << 10 };
        var env = StorageEnvironment.Open(dir, small);
        DataFileFixture.Commit(env, 1);
        env.Checkpoint();
        // Enough commits to fill several journal files, then a sync that retires the files the older header needs.
        for (var t = 2; t <= 40; t++) DataFileFixture.Commit(env, t);
        env.Checkpoint();
        env.SimulateCrash();
        Assert.Equal(40, DataFileInspector.NewerHeader(dir).LastSyncedTransactionId);
        DataFileInspector.FlipByte(dir, DataFileInspector.NewerHeader(dir).Slot * DataFileInspector.PageBytes + 200);

        var error = await Within.Catch(() =>
        {
            using var reopened = StorageEnvironment.Open(dir, small);
            DataFileFixture.CheckContent(reopened, 40, "opened without the newer header");
        });

        if (error is not null && error is not StorageException) throw new Xunit.Sdk.XunitException($"Expected a StorageException, got {error}");
    }

    [Fact]
    public async Task Both_slots_damaged_fails_with_StorageCorruptedException_naming_the_data_file()
    {
        using var temp = new TempDirectory("header");
        var dir = Build(temp);
        DataFileInspector.FlipByte(dir, 0 * DataFileInspector.PageBytes + DataFileInspector.PageHeaderBytes + 8);
        DataFileInspector.FlipByte(dir, 1 * DataFileInspector.PageBytes + DataFileInspector.PageHeaderBytes + 8);

        var error = await Within.Catch(() => StorageEnvironment.Open(dir, Options).Dispose());

        var corrupted = Expect.Exception<StorageCorruptedException>(error);
        Assert.Equal(Path.GetFullPath(DataFileInspector.PathOf(dir)), corrupted.Path);
        Assert.Contains("header", corrupted.Message, StringComparison.OrdinalIgnoreCase);
    }

    private static void DataFileFixture_Zero(string dir, int slot)
    {
        using var handle = File.OpenHandle(DataFileInspector.PathOf(dir), FileMode.Open, FileAccess.ReadWrite);
        RandomAccess.Write(handle, new byte[DataFileInspector.PageBytes], slot * (long)DataFileInspector.PageBytes);
    }
}

public sealed class A_truncated_data_file
{
    public static TheoryData<string> Lengths => new() { "half the pages in use", "half the file", "one page short", "a torn last page", "100 bytes", "0 bytes" };

    [Theory]
    [MemberData(nameof(Lengths))]
    public async Task Fails_with_a_typed_error_or_opens_intact_never_crashes_or_hangs(string length)
    {
        using var temp = new TempDirectory("truncate");
        var dir = temp.Combine("env");
        using (var env = StorageEnvironment.Open(dir, TestOptions.Small))
        {
            for (var t = 1; t <= 30; t++) DataFileFixture.Commit(env, t);
        }
        var inUse = DataFileInspector.NewerHeader(dir).NextPageNumber;
        var fileBytes = new FileInfo(DataFileInspector.PathOf(dir)).Length;
        long target = length switch
        {
            "half the pages in use" => inUse / 2 * DataFileInspector.PageBytes,
            "half the file" => fileBytes / 2,
            "one page short" => (inUse - 1) * DataFileInspector.PageBytes,
            "a torn last page" => (inUse - 1) * DataFileInspector.PageBytes + 100,
            "100 bytes" => 100,
            _ => 0,
        };
        DataFileInspector.Truncate(dir, target);

        var error = await Within.Catch(() =>
        {
            using var env = StorageEnvironment.Open(dir, TestOptions.Small);
            DataFileFixture.CheckContent(env, 30, $"truncated to {target} bytes");
        });

        var mustFail = target < inUse * DataFileInspector.PageBytes;
        if (mustFail) Assert.NotNull(error);
        if (error is not null)
        {
            var storage = error as StorageException ?? throw new Xunit.Sdk.XunitException($"Expected a StorageException, got {error}");
            Assert.True(storage.ErrorCode is StorageErrorCode.Corrupted or StorageErrorCode.IoFailure, $"{storage.ErrorCode}: {storage.Message}");
            Assert.Equal(Path.GetFullPath(DataFileInspector.PathOf(dir)), storage.Path);
        }
    }
}

public sealed class A_damaged_tree_page
{
    [Fact]
    public async Task Throws_StorageCorruptedException_naming_the_page_when_read_and_the_process_survives()
    {
        using var temp = new TempDirectory("page");
        var dir = temp.Combine("env");
        using (var env = StorageEnvironment.Open(dir, TestOptions.Small))
        {
            for (var t = 1; t <= 10; t++) DataFileFixture.Commit(env, t);
            using var tx = env.BeginWrite();
            tx.CreateTree("other").Put("x"u8, "y"u8);
            tx.Commit();
        }
        var leaves = DataFileInspector.FindPages(dir, DataFileInspector.LeafFlag);
        Assert.True(leaves.Count > 3, $"{leaves.Count} leaves");
        var damaged = leaves[leaves.Count / 2];
        DataFileInspector.FlipByte(dir, damaged * DataFileInspector.PageBytes + 5000);

        await Within.Run(() =>
        {
            using var env = StorageEnvironment.Open(dir, TestOptions.Small);
            using (var tx = env.BeginRead())
            {
                var tree = tx.OpenTree("t");
                var error = Assert.Throws<StorageCorruptedException>(() => TreeAssert.ReadAll(tree));
                Assert.Equal(damaged, error.PageNumber);
                Assert.Equal(damaged * DataFileInspector.PageBytes, error.OffsetBytes);
                Assert.Equal(Path.GetFullPath(DataFileInspector.PathOf(dir)), error.Path);
                Assert.Contains("checksum", error.Message, StringComparison.OrdinalIgnoreCase);
                // Again: the damage is not cached as valid.
                Assert.Throws<StorageCorruptedException>(() => TreeAssert.ReadAll(tree));
            }
            // The rest of the environment still reads.
            using (var tx = env.BeginRead())
            {
                Assert.Equal("y"u8.ToArray(), tx.OpenTree("other").Get("x"u8));
            }
        });
    }

    [Fact]
    public async Task That_says_it_is_another_page_is_reported_as_corruption()
    {
        using var temp = new TempDirectory("page");
        var dir = temp.Combine("env");
        using (var env = StorageEnvironment.Open(dir, TestOptions.Small))
        {
            for (var t = 1; t <= 10; t++) DataFileFixture.Commit(env, t);
        }
        var leaves = DataFileInspector.FindPages(dir, DataFileInspector.LeafFlag);
        var damaged = leaves[^1];
        DataFileInspector.FlipByte(dir, damaged * DataFileInspector.PageBytes + 1); // the page number field

        await Within.Run(() =>
        {
            using var env = StorageEnvironment.Open(dir, TestOptions.Small);
            using var tx = env.BeginRead();
            var error = Assert.Throws<StorageCorruptedException>(() => TreeAssert.ReadAll(tx.OpenTree("t")));
            Assert.Equal(damaged, error.PageNumber);
        });
    }
}
