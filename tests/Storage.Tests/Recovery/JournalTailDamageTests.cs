using Storage.Faults;
using Storage.Platform;
using Storage.Recovery;
using Storage.Tests.Support;

namespace Storage.Tests.RecoveryTests;

public sealed class A_torn_journal_tail
{
    private static int BigValues(int t) => t % 3 == 0 ? 4 : 1;

    [Fact]
    public async Task Zeroed_from_any_4KiB_boundary_inside_the_last_entries_recovers_exactly_the_last_whole_transaction()
    {
        using var fixture = JournalFixture.Create(synced: 5, total: 20, BigValues);
        var newestFile = fixture.Chain[^1].Path;
        var inNewest = fixture.Chain.Where(e => e.Path == newestFile).ToList();
        var lastFew = inNewest.TakeLast(4).ToList();
        Assert.True(lastFew.Count >= 2 && lastFew.Sum(e => e.SizeBytes) / 4096 >= 4, "the last entries span several blocks");

        var cuts = 0;
        for (var cut = lastFew[0].OffsetBytes; cut <= lastFew[^1].EndOffsetBytes; cut += 4096)
        {
            var copy = fixture.Copy($"cut-{cut}");
            var file = JournalFixture.InCopy(copy, fixture.Chain[^1]);
            // What a write that never reached the disk leaves: the file keeps its size, the blocks are still the pre-written zeros.
            JournalInspector.Zero(file, cut, new FileInfo(file).Length - cut);
            // The last transaction whose entry ends at or before the cut (entries before the newest file are whole).
            var expected = fixture.Chain.Where(e => e.Path != newestFile || e.EndOffsetBytes <= cut).Max(e => e.TransactionId);

            var last = await Within.Run(() => JournalFixture.OpenAndCheckPrefix(copy, BigValues, $"zeroed from {cut}"));

            Assert.Equal(expected, last);
            TempDirectory.DeleteDirectory(copy);
            cuts++;
        }
        Assert.True(cuts >= 4);
    }

    [Fact]
    public async Task Cut_short_fails_a_strict_open_naming_the_file_and_opens_at_the_last_whole_transaction_when_the_loss_is_accepted()
    {
        using var fixture = JournalFixture.Create(synced: 3, total: 20, BigValues);
        var newest = fixture.Chain[^1];
        var inNewest = fixture.Chain.Where(e => e.Path == newest.Path).ToList();
        var cut = inNewest[inNewest.Count / 2].EndOffsetBytes;
        var copy = fixture.Copy("cut");
        var file = JournalFixture.InCopy(copy, newest);
        JournalInspector.Truncate(file, cut);
        var journalBefore = DataFileInspector.Hash(file);

        var error = await Within.Catch(() => StorageEnvironment.Open(copy, JournalFixture.Options).Dispose());

        var corrupted = Expect.Exception<StorageCorruptedException>(error);
        Assert.Equal(Path.GetFullPath(file), corrupted.Path);
        Assert.Contains("cut short", corrupted.Message, StringComparison.Ordinal);
        Assert.Equal(journalBefore, DataFileInspector.Hash(file));

        var accepting = JournalFixture.Options with { JournalRecovery = JournalRecoveryMode.DiscardAfterDamage };
        var recovery = await Within.Run(() =>
        {
            using var env = StorageEnvironment.Open(copy, accepting);
            return env.GetStats().Recovery;
        });
        var last = await Within.Run(() => JournalFixture.OpenAndCheckPrefix(copy, BigValues, "cut short, loss accepted"));
        Assert.Equal(inNewest[inNewest.Count / 2].TransactionId, last);
        Assert.NotNull(recovery.Damage);
        Assert.NotNull(recovery.LostJournalsDirectory);
        Assert.True(File.Exists(Path.Combine(recovery.LostJournalsDirectory!, Path.GetFileName(file))), "the cut file is kept aside");
    }

    [Fact]
    public async Task Newest_file_deleted_fails_a_strict_open_and_opens_before_it_when_the_loss_is_accepted()
    {
        using var fixture = JournalFixture.Create(synced: 3, total: 30, BigValues);
        var newest = fixture.Chain[^1];
        var firstInNewest = fixture.Chain.First(e => e.Path == newest.Path);
        Assert.True(firstInNewest.TransactionId > fixture.Synced + 1, "the journal spans more than one file");
        var copy = fixture.Copy("deleted");
        File.Delete(JournalFixture.InCopy(copy, newest));

        var error = await Within.Catch(() => StorageEnvironment.Open(copy, JournalFixture.Options).Dispose());

        var corrupted = Expect.Exception<StorageCorruptedException>(error);
        Assert.Contains(Path.GetFileName(newest.Path), corrupted.Message, StringComparison.Ordinal);
        Assert.Contains("missing", corrupted.Message, StringComparison.Ordinal);

        var accepting = JournalFixture.Options with { JournalRecovery = JournalRecoveryMode.DiscardAfterDamage };
        await Within.Run(() => StorageEnvironment.Open(copy, accepting).Dispose());
        var last = await Within.Run(() => JournalFixture.OpenAndCheckPrefix(copy, BigValues, "newest file deleted, loss accepted"));
        Assert.Equal(firstInNewest.TransactionId - 1, last);
    }

    [Fact]
    public async Task Every_journal_file_deleted_fails_the_open_and_leaves_the_data_file_as_it_was()
    {
        using var fixture = JournalFixture.Create(synced: 3, total: 12, BigValues);
        var copy = fixture.Copy("none");
        foreach (var (_, path) in JournalInspector.Files(copy)) File.Delete(path);
        var dataBefore = DataFileInspector.Hash(DataFileInspector.PathOf(copy));

        var error = await Within.Catch(() => StorageEnvironment.Open(copy, JournalFixture.Options).Dispose());

        var corrupted = Expect.Exception<StorageCorruptedException>(error);
        Assert.Contains("missing", corrupted.Message, StringComparison.Ordinal);
        Assert.Equal(dataBefore, DataFileInspector.Hash(DataFileInspector.PathOf(copy)));
    }

    [Theory]
    [InlineData("marker", 0)]
    [InlineData("transaction id", 16)]
    [InlineData("payload size", 24)]
    [InlineData("payload size, high byte", 31)]
    [InlineData("checksum", 56)]
    [InlineData("first payload byte", 128)]
    [InlineData("middle of the payload", -2)]
    [InlineData("last payload byte", -1)]
    public async Task With_a_flipped_bit_in_the_last_entry_recovers_the_transaction_before_it(string where, int offset)
    {
        using var fixture = JournalFixture.Create(synced: 4, total: 10, BigValues);
        var last = fixture.Chain[^1];
        var position = offset switch
        {
            -1 => last.OffsetBytes + JournalInspector.HeaderBytes + last.PayloadBytes - 1,
            -2 => last.OffsetBytes + JournalInspector.HeaderBytes + last.PayloadBytes / 2,
            _ => last.OffsetBytes + offset,
        };
        var copy = fixture.Copy("flip");
        JournalInspector.FlipBit(JournalFixture.InCopy(copy, last), position, bit: offset == 31 ? 6 : 0);

        var recovered = await Within.Run(() => JournalFixture.OpenAndCheckPrefix(copy, BigValues, $"bit flipped in the {where}"));

        Assert.Equal(last.TransactionId - 1, recovered);
        // The recovered state is durable: the next open shows the same, and new commits continue from it.
        using var env = StorageEnvironment.Open(copy, JournalFixture.Options);
        Assert.Equal(last.TransactionId - 1, env.GetStats().LastTransactionId);
        using (var tx = env.BeginWrite())
        {
            tx.OpenTree(JournalFixture.Tree).Put("after"u8, "recovery"u8);
            Assert.Equal(last.TransactionId, tx.Commit().TransactionId);
        }
    }

    [Fact]
    public async Task Zeroed_like_a_write_that_never_happened_recovers_the_transaction_before_it()
    {
        using var fixture = JournalFixture.Create(synced: 2, total: 8, BigValues);
        var last = fixture.Chain[^1];
        var copy = fixture.Copy("zeroed");
        using (var handle = File.OpenHandle(JournalFixture.InCopy(copy, last), FileMode.Open, FileAccess.ReadWrite))
        {
            RandomAccess.Write(handle, new byte[last.SizeBytes], last.OffsetBytes);
        }

        var recovered = await Within.Run(() => JournalFixture.OpenAndCheckPrefix(copy, BigValues, "last entry zeroed"));

        Assert.Equal(last.TransactionId - 1, recovered);
    }

    [Fact]
    public async Task Zeroed_only_at_its_start_recovers_the_transaction_before_it_and_says_it_dropped_an_entry()
    {
        // Bytes of the entry remain after its zeroed first block: a write was there (a device may persist a write's later
        // sectors and not its first), so the open reports the dropped tail; a wholly zeroed entry leaves nothing to report.
        using var fixture = JournalFixture.Create(synced: 2, total: 8, BigValues);
        var last = fixture.Chain[^1];
        Assert.True(last.SizeBytes > 4096, "the last entry spans more than one block");
        var copy = fixture.Copy("start-zeroed");
        using (var handle = File.OpenHandle(JournalFixture.InCopy(copy, last), FileMode.Open, FileAccess.ReadWrite))
        {
            RandomAccess.Write(handle, new byte[4096], last.OffsetBytes);
        }

        var recovery = await Within.Run(() =>
        {
            using var env = StorageEnvironment.Open(copy, JournalFixture.Options);
            Assert.Equal(last.TransactionId - 1, env.GetStats().LastTransactionId);
            return env.GetStats().Recovery;
        });

        Assert.True(recovery.TornTailDropped, "the open says it dropped a torn tail");
        Assert.Contains(Path.GetFileName(JournalFixture.InCopy(copy, last)), recovery.TornTail, StringComparison.Ordinal);
        Assert.Equal(last.TransactionId - 1, JournalFixture.OpenAndCheckPrefix(copy, BigValues, "last entry's start zeroed"));
    }

    [Fact]
    public async Task An_undamaged_journal_recovers_every_transaction()
    {
        using var fixture = JournalFixture.Create(synced: 4, total: 12, BigValues);
        var copy = fixture.Copy("intact");

        var recovered = await Within.Run(() => JournalFixture.OpenAndCheckPrefix(copy, BigValues, "intact"));

        Assert.Equal(12, recovered);
    }
}

public sealed class A_damaged_journal_entry_followed_by_valid_ones
{
    private static int BigValues(int t) => t % 2 == 0 ? 3 : 0;

    public static TheoryData<int, string> Cases => new()
    {
        { 0, "payload" }, { 0, "header" },
        { 3, "payload" }, { 3, "checksum" },
        { -2, "payload" }, { -2, "marker" },
    };

    [Theory]
    [MemberData(nameof(Cases))]
    public async Task Fails_the_open_with_StorageCorruptedException_naming_the_file_and_offset_and_changes_nothing(int index, string where)
    {
        using var fixture = JournalFixture.Create(synced: 3, total: 12, BigValues);
        var entry = fixture.Chain[index < 0 ? fixture.Chain.Count + index : index];
        Assert.True(entry.TransactionId < fixture.Total, "valid entries follow");
        var copy = fixture.Copy("middle");
        var file = JournalFixture.InCopy(copy, entry);
        var position = where switch
        {
            "payload" => entry.OffsetBytes + JournalInspector.HeaderBytes + entry.PayloadBytes / 2,
            "header" => entry.OffsetBytes + 40,
            "checksum" => entry.OffsetBytes + 56,
            _ => entry.OffsetBytes,
        };
        JournalInspector.FlipBit(file, position, bit: 3);
        var dataBefore = DataFileInspector.Hash(DataFileInspector.PathOf(copy));
        var journalBefore = DataFileInspector.Hash(file);

        var error = await Within.Catch(() => StorageEnvironment.Open(copy, JournalFixture.Options).Dispose());

        var corrupted = Expect.Exception<StorageCorruptedException>(error);
        Assert.Equal(StorageErrorCode.Corrupted, corrupted.ErrorCode);
        Assert.Equal(Path.GetFullPath(file), corrupted.Path);
        Assert.Equal(entry.OffsetBytes, corrupted.OffsetBytes);
        Assert.Contains(Path.GetFileName(file), corrupted.Message, StringComparison.Ordinal);
        Assert.Equal(dataBefore, DataFileInspector.Hash(DataFileInspector.PathOf(copy)));
        Assert.Equal(journalBefore, DataFileInspector.Hash(file));
        // Failing again is deterministic: the failed open left nothing behind (lock released, nothing replayed).
        var again = await Within.Catch(() => StorageEnvironment.Open(copy, JournalFixture.Options).Dispose());
        Expect.Exception<StorageCorruptedException>(again);
    }
}

/// <summary>
/// An open that accepts the loss of a damaged journal and stops part-way (a crash, a failed call): the journals it gives
/// up are never deleted, and no later open takes what is left for an undamaged journal.
/// </summary>
public sealed class A_damaged_journal_whose_loss_an_interrupted_open_accepted
{
    private static int BigValues(int t) => t % 2 == 0 ? 3 : 0;

    private static readonly StorageOptions Accepting = JournalFixture.Options with { JournalRecovery = JournalRecoveryMode.DiscardAfterDamage };

    [Theory]
    [InlineData("moving aside")]
    [InlineData("writing the header")]
    public async Task Still_fails_a_strict_open_and_keeps_every_given_up_journal_aside(string stoppedAt)
    {
        using var fixture = JournalFixture.Create(synced: 3, total: 12, BigValues);
        var entry = fixture.Chain[^4];
        var copy = fixture.Copy("interrupted");
        var file = JournalFixture.InCopy(copy, entry);
        JournalInspector.FlipBit(file, entry.OffsetBytes + JournalInspector.HeaderBytes + entry.PayloadBytes / 2, bit: 3);
        var given = Directory.GetFiles(JournalInspector.Directory(copy), "*.journal").Select(Path.GetFileName)
            .Where(name => string.CompareOrdinal(name, Path.GetFileName(file)) >= 0).ToList();

        var faults = new ScriptedFaults();
        // Stopped once the files are moved (the lost-* folder's sync fails), or at the header that lets them go.
        if (stoppedAt == "moving aside") faults.FailSyncs(path => Path.GetFileName(path).StartsWith("lost-", StringComparison.Ordinal), ScriptedFaults.Eio, thisThreadOnly: false);
        else faults.FailWrites((path, offset, _) => ScriptedFaults.IsDataFile(path) && offset < 2 * 8192, ScriptedFaults.Eio, thisThreadOnly: false);
        var stopped = await Within.Catch(() => StorageEnvironment.Open(copy, Accepting.WithFaults(faults)).Dispose());
        Assert.IsAssignableFrom<StorageException>(stopped);
        Assert.Equal(1, faults.Fired);

        Expect.Exception<StorageCorruptedException>(await Within.Catch(() => StorageEnvironment.Open(copy, JournalFixture.Options).Dispose()));
        var recovery = await Within.Run(() =>
        {
            using var env = StorageEnvironment.Open(copy, Accepting);
            return env.GetStats().Recovery;
        });
        Assert.Equal(entry.TransactionId - 1, await Within.Run(() => JournalFixture.OpenAndCheckPrefix(copy, BigValues, $"stopped {stoppedAt}, then accepted")));
        // Wherever the first open stopped, every file it gave up is in a lost-* folder.
        var aside = Directory.GetFiles(JournalInspector.Directory(copy), "*.journal", SearchOption.AllDirectories)
            .Where(p => Path.GetFileName(Path.GetDirectoryName(p)!).StartsWith("lost-", StringComparison.Ordinal)).Select(Path.GetFileName).ToList();
        Assert.Subset(aside.ToHashSet(), given.ToHashSet());
        Assert.NotNull(recovery.Damage ?? recovery.LostJournalsDirectory);
    }

    [Fact]
    public async Task After_a_file_switch_that_failed_once_the_next_file_was_named_a_strict_open_still_fails()
    {
        using var temp = new TempDirectory("journal-switch");
        var faults = new FailingSyncAfterNaming();
        var options = JournalFixture.Options.WithFaults(faults);
        var env = StorageEnvironment.Open(temp.Path, options);
        PutValue(env, "a", 100);
        PutValue(env, "b", 100);
        // The spare is renamed into use as the next file, then the folder's sync fails: this commit fails, and the
        // writer goes on in the file it was in, with the next file (first transaction 3) left on disk.
        faults.Armed = true;
        Assert.IsAssignableFrom<StorageException>(Record.Exception(() => PutValue(env, "big", 200_000)));
        Assert.Equal(1, faults.Fired);
        PutValue(env, "c", 100);
        PutValue(env, "d", 100);
        PutValue(env, "e", 100);
        env.SimulateCrash();
        var entries = JournalInspector.Entries(temp.Path).Where(e => e.TransactionId == 3).ToList();
        Assert.Single(entries);
        var c = entries[0];
        JournalInspector.FlipBit(c.Path, c.OffsetBytes + JournalInspector.HeaderBytes + c.PayloadBytes / 2, bit: 3);

        // Transactions 4 and 5 follow the damaged one: a strict open must not take the next file for the journal's way on.
        var error = await Within.Catch(() => StorageEnvironment.Open(temp.Path, JournalFixture.Options).Dispose());
        Expect.Exception<StorageCorruptedException>(error);

        static void PutValue(StorageEnvironment env, string key, int size)
        {
            using var tx = env.BeginWrite();
            tx.OpenOrCreateTree("t").Put(TestData.Key(key), TestData.Value(1, size));
            tx.Commit();
        }
    }

    /// <summary>Once armed, fails the first sync of a folder after a file was renamed to a journal file's name (the rename stands).</summary>
    private sealed class FailingSyncAfterNaming : IFaultInjector
    {
        private volatile bool _named;
        private int _fired;

        public volatile bool Armed;

        public int Fired => Volatile.Read(ref _fired);

        public void BeforeWrite(string path, long offsetBytes, long lengthBytes)
        {
        }

        public void BeforeSync(string path)
        {
            if (!Armed || !_named || !Directory.Exists(path)) return;
            Armed = false;
            Interlocked.Increment(ref _fired);
            throw ScriptedFaults.Eio();
        }

        public void AfterRename(string fromPath, string toPath)
        {
            if (Armed && ScriptedFaults.IsJournal(toPath)) _named = true;
        }
    }
}
