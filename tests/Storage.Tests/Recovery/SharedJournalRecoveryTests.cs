using Storage.Commit;
using Storage.Journal;
using Storage.Recovery;
using Storage.Tests.Support;

namespace Storage.Tests.RecoveryTests;

/// <summary>
/// Recovery from shared journal files of an environment group: files written by the group's root that hold the entries of
/// several environments and are hard-linked into each member's journal folder. Each environment replays its own entries,
/// steps over the others' whole entries, follows its record in the group end marker from file to file, and treats damage
/// among them as it treats damage in a journal of its own. The shared files here are built from the entries two real
/// environments wrote to their own journals (then left as a crash leaves them), interleaved as a group's writer would.
/// </summary>
public sealed class Recovery_from_shared_journal_files : IDisposable
{
    private const string Tree = "t";
    private const int Transactions = 6;
    private static readonly StorageOptions Options = TestOptions.JournalOnly with { MinJournalFileSizeBytes = 256 << 10, MaxJournalFileSizeBytes = 256 << 10 };

    private readonly TempDirectory _temp = new("shared");
    private readonly string _root;
    private readonly string _branch;
    private readonly List<RawEntry> _rootEntries;
    private readonly List<RawEntry> _branchEntries;
    private readonly ulong _rootId;

    public Recovery_from_shared_journal_files()
    {
        _root = _temp.Combine("root");
        _branch = _temp.Combine("branch");
        _rootEntries = CommitAndCrash(_root, "root", out _rootId);
        _branchEntries = CommitAndCrash(_branch, "branch", out _);
    }

    public void Dispose() => _temp.Dispose();

    [Fact]
    public void Each_environment_replays_its_own_entries_and_steps_over_the_others()
    {
        var first = FirstFileNumber(_root);
        var shared = WriteShared(_root, first, Interleave(_rootEntries, _branchEntries), endRecords: []);
        LinkInto(_branch, FirstFileNumber(_branch), shared);

        AssertRecovered(_root, "root", Transactions);
        AssertRecovered(_branch, "branch", Transactions);
    }

    [Fact]
    public void A_member_follows_its_record_in_the_group_end_marker_to_its_next_file()
    {
        var rootFirst = FirstFileNumber(_root);
        var branchFirst = FirstFileNumber(_branch);
        // The branch's numbers differ from the root's, as they do in a group: the link has the branch's own number.
        var branchSecond = branchFirst + 5;
        var endRecords = new[]
        {
            new GroupEndRecord(_rootId, rootFirst, rootFirst + 1, NextTransactionId: 4),
            new GroupEndRecord(BranchId(), branchFirst, branchSecond, NextTransactionId: 3),
        };
        var firstFile = WriteShared(_root, rootFirst, Interleave(_rootEntries[..3], _branchEntries[..2]), endRecords);
        var secondFile = WriteShared(_root, rootFirst + 1, Interleave(_branchEntries[2..], _rootEntries[3..]), endRecords: []);
        LinkInto(_branch, branchFirst, firstFile);
        // The group end marker names the branch's next file by the branch's number, which the file header does not know.
        LinkInto(_branch, branchSecond, secondFile, allowGap: true);

        AssertRecovered(_root, "root", Transactions);
        AssertRecovered(_branch, "branch", Transactions);
    }

    [Fact]
    public void A_member_whose_next_link_is_missing_refuses_to_open_and_names_the_file()
    {
        var rootFirst = FirstFileNumber(_root);
        var branchFirst = FirstFileNumber(_branch);
        var endRecords = new[]
        {
            new GroupEndRecord(_rootId, rootFirst, rootFirst + 1, NextTransactionId: 4),
            new GroupEndRecord(BranchId(), branchFirst, branchFirst + 1, NextTransactionId: 3),
        };
        var firstFile = WriteShared(_root, rootFirst, Interleave(_rootEntries[..3], _branchEntries[..2]), endRecords);
        WriteShared(_root, rootFirst + 1, Interleave(_branchEntries[2..], _rootEntries[3..]), endRecords: []);
        LinkInto(_branch, branchFirst, firstFile);
        // The branch's link to the second file is gone: the marker says its journal goes on there.

        AssertRecovered(_root, "root", Transactions);
        var error = Assert.Throws<StorageCorruptedException>(() => StorageEnvironment.Open(_branch, Options).Dispose());
        Assert.Contains(JournalFile.FileName(branchFirst + 1), error.Message);
        Assert.Contains("missing", error.Message);
    }

    [Fact]
    public void A_damaged_entry_of_another_member_before_a_valid_own_entry_is_damage_not_the_end()
    {
        var first = FirstFileNumber(_root);
        var entries = Interleave(_rootEntries, _branchEntries);
        var shared = WriteShared(_root, first, entries, endRecords: []);
        LinkInto(_branch, FirstFileNumber(_branch), shared);
        // Damage the root's third entry: the branch's entries after it are cut off from its walk.
        var damaged = entries.FindIndex(e => e.EnvironmentId == _rootId && e.TransactionId == 3);
        var offset = JournalFileHeader.BlockBytes + entries.Take(damaged).Sum(e => (long)e.Bytes.Length) + 200;
        using (var file = File.OpenHandle(shared, FileMode.Open, FileAccess.ReadWrite))
        {
            var one = new byte[1];
            RandomAccess.Read(file, one, offset);
            one[0] ^= 0x40;
            RandomAccess.Write(file, one, offset);
        }

        var error = Assert.Throws<StorageCorruptedException>(() => StorageEnvironment.Open(_branch, Options).Dispose());
        Assert.Contains("valid later entries", error.Message);
        var accepting = Options with { JournalRecovery = JournalRecoveryMode.DiscardAfterDamage };
        // The branch's entries before the damage were transactions 1-2 (interleaved root 1, branch 1, root 2, branch 2, root 3).
        AssertRecovered(_branch, "branch", 2, accepting);
    }

    [Fact]
    public void An_incomplete_entry_of_another_member_at_the_end_is_that_members_torn_tail_only()
    {
        var first = FirstFileNumber(_root);
        // The root's last entry comes last and is cut: its own torn tail, nothing of the branch's.
        var entries = Interleave(_branchEntries, _rootEntries);
        var shared = WriteShared(_root, first, entries, endRecords: []);
        LinkInto(_branch, FirstFileNumber(_branch), shared);
        var last = entries[^1];
        Assert.Equal(_rootId, last.EnvironmentId);
        var offset = JournalFileHeader.BlockBytes + entries.Take(entries.Count - 1).Sum(e => (long)e.Bytes.Length);
        using (var file = File.OpenHandle(shared, FileMode.Open, FileAccess.ReadWrite))
        {
            RandomAccess.Write(file, new byte[last.Bytes.Length - JournalEntryHeader.SizeBytes], offset + JournalEntryHeader.SizeBytes);
        }

        using (var branch = StorageEnvironment.Open(_branch, Options))
        {
            Assert.Equal(Transactions, branch.GetStats().Recovery.ReplayedTransactions);
            Assert.False(branch.GetStats().Recovery.TornTailDropped, branch.GetStats().Recovery.TornTail);
        }
        using (var root = StorageEnvironment.Open(_root, Options))
        {
            Assert.Equal(Transactions - 1, root.GetStats().Recovery.ReplayedTransactions);
            Assert.True(root.GetStats().Recovery.TornTailDropped);
        }
        AssertRecovered(_branch, "branch", Transactions);
        AssertRecovered(_root, "root", Transactions - 1);
    }

    [Fact]
    public void After_recovery_a_member_goes_on_in_a_file_of_its_own_and_removes_only_its_link()
    {
        var first = FirstFileNumber(_root);
        var shared = WriteShared(_root, first, Interleave(_rootEntries, _branchEntries), endRecords: []);
        var branchLink = LinkInto(_branch, FirstFileNumber(_branch), shared);
        var sharedBytes = File.ReadAllBytes(shared);

        using (var branch = StorageEnvironment.Open(_branch, Options))
        {
            Assert.Equal(Transactions, branch.GetStats().Recovery.ReplayedTransactions);
            Put(branch, "branch", Transactions + 1);
        }

        Assert.False(File.Exists(branchLink), "the branch's link to the shared file is gone once its entries are in its data file");
        Assert.Equal(sharedBytes, File.ReadAllBytes(shared));
        AssertRecovered(_root, "root", Transactions);
        AssertRecovered(_branch, "branch", Transactions + 1);
    }

    [Fact]
    public void A_member_with_nothing_to_replay_in_a_shared_file_does_not_write_into_it()
    {
        // A member linked to a file it has no entries in yet (a new member, or one idle since the last switch).
        var member = _temp.Combine("member");
        StorageEnvironment.Open(member, Options).SimulateCrash();
        var first = FirstFileNumber(_root);
        var shared = WriteShared(_root, first, _rootEntries, endRecords: []);
        var link = LinkInto(member, FirstFileNumber(member), shared);
        var before = File.ReadAllBytes(shared);

        using (var env = StorageEnvironment.Open(member, Options))
        {
            Assert.Equal(0, env.GetStats().Recovery.ReplayedTransactions);
            Put(env, "member", 1);
        }

        Assert.Equal(before, File.ReadAllBytes(shared));
        Assert.False(File.Exists(link), "the member went on in a file of its own and removed its link");
        using (var env = StorageEnvironment.Open(member, Options))
        {
            using var tx = env.BeginRead();
            Assert.Equal(TestData.Value("member-1"), tx.OpenTree(Tree).Get(TestData.Key("last")));
        }
        AssertRecovered(_root, "root", Transactions);
    }

    [Fact]
    public void In_a_recycled_shared_file_the_entries_of_its_earlier_use_are_not_replayed()
    {
        var number = FirstFileNumber(_root);
        // The file's present use holds transactions 1-3 of each member, stamped with its number. After them lie entries of
        // its earlier use, under an older number: valid, and with the very transaction ids that would continue each chain
        // (as a member restored from an older copy would meet them).
        var present = Interleave(_rootEntries[..3], _branchEntries[..3]).Select(e => e.StampedFor(number)).ToList();
        var stale = Interleave(_rootEntries[3..], _branchEntries[3..]).Select(e => e.StampedFor(number - 7)).ToList();
        var shared = WriteShared(_root, number, [.. present, .. stale], endRecords: [], recycled: true);
        LinkInto(_branch, FirstFileNumber(_branch), shared);

        AssertEachReplaysCleanly(3);
    }

    [Fact]
    public void In_a_recycled_shared_file_a_group_end_marker_of_its_earlier_use_is_neither_followed_nor_a_torn_tail()
    {
        var number = FirstFileNumber(_root);
        var staleRecords = new[] { new GroupEndRecord(_rootId, number, number + 1, NextTransactionId: 4), new GroupEndRecord(BranchId(), FirstFileNumber(_branch), FirstFileNumber(_branch) + 1, NextTransactionId: 4) };
        var present = Interleave(_rootEntries[..3], _branchEntries[..3]).Select(e => e.StampedFor(number)).ToList();
        var shared = WriteShared(_root, number, present, staleRecords, recycled: true, markerNumber: number - 7);
        LinkInto(_branch, FirstFileNumber(_branch), shared);

        AssertEachReplaysCleanly(3);
    }

    [Fact]
    public unsafe void In_a_shared_file_that_was_the_roots_own_an_end_marker_of_its_earlier_use_is_not_a_torn_tail()
    {
        var number = FirstFileNumber(_root);
        var present = Interleave(_rootEntries[..3], _branchEntries[..3]).Select(e => e.StampedFor(number)).ToList();
        var shared = WriteShared(_root, number, present, endRecords: [], recycled: true);
        // Right after the present entries, the end marker the root's own journal left there, naming the file by its number.
        var block = new byte[JournalEndMarker.BlockBytes];
        fixed (byte* p = block) JournalEndMarker.Create(_rootId, number, number + 1, nextTransactionId: 40).WriteBlock(p);
        using (var file = File.OpenHandle(shared, FileMode.Open, FileAccess.ReadWrite))
        {
            RandomAccess.Write(file, block, JournalFileHeader.BlockBytes + present.Sum(e => (long)e.Bytes.Length));
        }
        LinkInto(_branch, FirstFileNumber(_branch), shared);

        AssertEachReplaysCleanly(3);
    }

    private ulong BranchId() => _branchEntries[0].EnvironmentId;

    /// <summary>Root and branch each replay exactly <paramref name="transactions"/>, drop no torn tail, and hold them.</summary>
    private void AssertEachReplaysCleanly(int transactions)
    {
        foreach (var (directory, name) in new[] { (_root, "root"), (_branch, "branch") })
        {
            using (var env = StorageEnvironment.Open(directory, Options))
            {
                Assert.Equal(transactions, env.GetStats().Recovery.ReplayedTransactions);
                Assert.False(env.GetStats().Recovery.TornTailDropped, env.GetStats().Recovery.TornTail);
            }
            AssertRecovered(directory, name, transactions);
        }
    }

    private static List<RawEntry> CommitAndCrash(string directory, string name, out ulong environmentId)
    {
        var env = StorageEnvironment.Open(directory, Options);
        for (var t = 1; t <= Transactions; t++) Put(env, name, t);
        env.SimulateCrash();
        var file = Directory.GetFiles(Path.Combine(directory, "Journals"), "*.journal").Single();
        var header = JournalFiles.ReadHeader(file, out _, out _)!.Value;
        environmentId = header.EnvironmentId;
        var entries = new List<RawEntry>();
        using var reader = new JournalEntryReader(file, header.FileNumber);
        long offset = JournalFileHeader.BlockBytes;
        while (reader.TryRead(offset, environmentId, out var entry, out _, out var size))
        {
            var bytes = new byte[size];
            using (var handle = File.OpenHandle(file, FileMode.Open, FileAccess.Read)) RandomAccess.Read(handle, bytes, offset);
            entries.Add(new RawEntry(environmentId, entry.TransactionId, bytes));
            offset += size;
        }
        Assert.Equal(Enumerable.Range(1, Transactions).Select(t => (long)t), entries.Select(e => e.TransactionId));
        return entries;
    }

    private static void Put(StorageEnvironment env, string name, int t)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree(Tree);
        tree.Put(TestData.Key($"{name}-{t:D3}"), TestData.Value(t, 300));
        tree.Put(TestData.Key("last"), TestData.Value($"{name}-{t}"));
        Assert.Equal(t, tx.Commit().TransactionId);
    }

    private static void AssertRecovered(string directory, string name, int transactions, StorageOptions? options = null)
    {
        using var env = StorageEnvironment.Open(directory, options ?? Options);
        using var tx = env.BeginRead();
        var tree = tx.OpenTree(Tree);
        Assert.Equal(TestData.Value($"{name}-{transactions}"), tree.Get(TestData.Key("last")));
        for (var t = 1; t <= Transactions; t++)
        {
            var value = tree.Get(TestData.Key($"{name}-{t:D3}"));
            if (t <= transactions) Assert.Equal(TestData.Value(t, 300), value);
            else Assert.Null(value);
        }
    }

    private static List<RawEntry> Interleave(IReadOnlyList<RawEntry> a, IReadOnlyList<RawEntry> b)
    {
        var all = new List<RawEntry>();
        for (var i = 0; i < Math.Max(a.Count, b.Count); i++)
        {
            if (i < a.Count) all.Add(a[i]);
            if (i < b.Count) all.Add(b[i]);
        }
        return all;
    }

    private static long FirstFileNumber(string directory) =>
        Directory.GetFiles(Path.Combine(directory, "Journals"), "*.journal").Select(f => JournalFile.TryParseNumber(Path.GetFileName(f), out var n) ? n : -1).Min();

    /// <summary>
    /// Writes a shared file of the root's as its writer would: the shared header, the entries back to back, then the group
    /// end marker when there are records, zeros to the end. It replaces the root's file of that number.
    /// </summary>
    private unsafe string WriteShared(string rootDirectory, long number, List<RawEntry> entries, GroupEndRecord[] endRecords, bool recycled = false, long? markerNumber = null)
    {
        var entryBytes = entries.Sum(e => (long)e.Bytes.Length);
        var size = Math.Max(Options.MinJournalFileSizeBytes, JournalFileHeader.BlockBytes * 2 + entryBytes);
        var bytes = new byte[size];
        var header = JournalFileHeader.Create(_rootId, number, size, firstTransactionId: entries.First(e => e.EnvironmentId == _rootId).TransactionId, recycled, shared: true);
        fixed (byte* p = bytes) header.WriteBlock(p);
        var offset = JournalFileHeader.BlockBytes;
        foreach (var entry in entries)
        {
            entry.Bytes.CopyTo(bytes, offset);
            offset += entry.Bytes.Length;
        }
        if (endRecords.Length > 0) JournalGroupEndMarker.Write(bytes.AsSpan(offset), _rootId, markerNumber ?? number, endRecords);
        var path = Path.Combine(rootDirectory, "Journals", JournalFile.FileName(number));
        File.WriteAllBytes(path, bytes);
        return path;
    }

    /// <summary>Hard-links the shared file into a member's journal folder under the member's number (replacing its own file of that number).</summary>
    private static string LinkInto(string directory, long number, string shared, bool allowGap = false)
    {
        var link = Path.Combine(directory, "Journals", JournalFile.FileName(number));
        if (!allowGap) Assert.True(File.Exists(link), "the member had a file of that number");
        File.Delete(link);
        Platform.Pal.HardLink(shared, link);
        return link;
    }

    private sealed record RawEntry(ulong EnvironmentId, long TransactionId, byte[] Bytes)
    {
        /// <summary>The entry as a group's writer puts it into its shared file <paramref name="fileNumber"/>: stamped, checksum to match.</summary>
        public unsafe RawEntry StampedFor(long fileNumber)
        {
            var bytes = (byte[])Bytes.Clone();
            fixed (byte* p = bytes)
            {
                var header = (JournalEntryHeader*)p;
                header->SharedFileStamp = JournalEntryHeader.StampOf(fileNumber);
                header->Checksum = JournalEntryBuilder.ComputeChecksum(p, header->PayloadSizeBytes, header->TransactionId);
            }
            return this with { Bytes = bytes };
        }
    }
}
