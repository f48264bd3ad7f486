using System.Buffers.Binary;
using Storage.Commit;
using Storage.Inspection;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.Integrity;

/// <summary>
/// Headers and journal entries whose checksums are valid but whose contents are impossible (a bug, a bad copy, a
/// hostile file; found by fuzzing): the open and the checker must refuse them with a typed error, without sizing
/// anything by them and without changing a file.
/// </summary>
public sealed class A_valid_checksum_over_an_impossible_state
{
    private static readonly StorageOptions Options = TestOptions.JournalOnly with { CompressionThresholdBytes = 0 };

    /// <summary>Transactions 1..3 synced, 4..8 only in the journal (uncompressed entries).</summary>
    private static string Crashed(TempDirectory temp)
    {
        var env = StorageEnvironment.Open(temp.Path, Options);
        for (var t = 1; t <= 8; t++)
        {
            PutAndCommit(env, "t", ($"k{t}", new string('v', 100)));
            if (t == 3) env.Checkpoint();
        }
        env.SimulateCrash();
        return temp.Path;
    }

    [Fact]
    public async Task A_header_claiming_two_to_the_forty_pages_fails_the_open_and_the_check_says_so_without_sizing_anything_by_it()
    {
        using var temp = new TempDirectory("forged");
        using (var env = StorageEnvironment.Open(temp.Path, Options)) PutAndCommit(env, "t", ("k", "v"));
        for (var slot = 0; slot < 2; slot++) RewriteHeader(temp.Path, slot, header => BinaryPrimitives.WriteInt64LittleEndian(header[40..], 1L << 40));

        var error = await Within.Catch(() => StorageEnvironment.Open(temp.Path, Options).Dispose());

        Expect.Exception<StorageCorruptedException>(error);
        var report = await Within.Run(() => EnvironmentSnapshot.Check(temp.Path, collectPages: true));
        Assert.False(report.IsConsistent);
        Assert.Contains(report.Problems, p => p.Kind == "open" && p.Message.Contains("impossible", StringComparison.Ordinal));
    }

    [Fact]
    public async Task A_header_claiming_more_pages_than_the_file_and_journal_hold_is_checked_only_as_far_as_they_go()
    {
        using var temp = new TempDirectory("forged");
        using (var env = StorageEnvironment.Open(temp.Path, Options)) PutAndCommit(env, "t", ("k", "v"));
        for (var slot = 0; slot < 2; slot++) RewriteHeader(temp.Path, slot, header => BinaryPrimitives.WriteInt64LittleEndian(header[40..], (1L << 40) - 1));

        var report = await Within.Run(() => EnvironmentSnapshot.Check(temp.Path, collectPages: true));

        Assert.Contains(report.Problems, p => p.Kind == "next-page");
        Assert.True(report.Pages!.Length <= 128 + Allocation.FreeSpaceLayout.PagesPerRegion, $"{report.Pages.Length} pages collected");
    }

    [Fact]
    public async Task A_header_whose_last_tree_id_is_past_int_max_fails_the_open()
    {
        using var temp = new TempDirectory("forged");
        using (var env = StorageEnvironment.Open(temp.Path, Options)) PutAndCommit(env, "t", ("k", "v"));
        // The root tree header sits at 64 in the file header; its LastTreeId at 48 in the tree header.
        for (var slot = 0; slot < 2; slot++) RewriteHeader(temp.Path, slot, header => BinaryPrimitives.WriteInt64LittleEndian(header[(64 + 48)..], int.MaxValue + 10L));

        var error = await Within.Catch(() => StorageEnvironment.Open(temp.Path, Options).Dispose());

        Assert.Contains("tree id", Expect.Exception<StorageCorruptedException>(error).Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task An_entry_that_moves_the_next_page_number_further_than_its_records_can_fails_the_open_and_changes_nothing()
    {
        using var temp = new TempDirectory("forged");
        var dir = Crashed(temp);
        var entry = JournalInspector.Chain(dir, 3, 8)[2];
        RewriteEntry(entry, (header, payload) => BinaryPrimitives.WriteInt64LittleEndian(header[40..], 1L << 24));
        var dataBytes = new FileInfo(DataFileInspector.PathOf(dir)).Length;
        var journals = JournalInspector.Files(dir).Select(f => DataFileInspector.Hash(f.Path)).ToList();

        var error = await Within.Catch(() => StorageEnvironment.Open(dir, Options).Dispose());

        Assert.Contains("next page number", Expect.Exception<StorageCorruptedException>(error).Message, StringComparison.Ordinal);
        Assert.Equal(dataBytes, new FileInfo(DataFileInspector.PathOf(dir)).Length);
        Assert.Equal(journals, JournalInspector.Files(dir).Select(f => DataFileInspector.Hash(f.Path)).ToList());
        Assert.Contains(EnvironmentSnapshot.Check(dir).Problems, p => p.Kind == "journal" && p.Message.Contains("impossible", StringComparison.Ordinal));
    }

    [Fact]
    public async Task A_whole_page_record_claiming_more_pages_than_its_data_holds_fails_quickly_with_a_typed_error()
    {
        using var temp = new TempDirectory("forged");
        var dir = Crashed(temp);
        var entry = JournalInspector.Chain(dir, 3, 8)[2];
        RewriteEntry(entry, (header, payload) =>
        {
            // The first record: 5,000 whole pages (within what the entry's size allows the next page number to move) of 100 bytes.
            var next = BinaryPrimitives.ReadInt64LittleEndian(header[40..]);
            BinaryPrimitives.WriteInt64LittleEndian(header[40..], next + 5000);
            BinaryPrimitives.WriteInt32LittleEndian(payload[8..], 5000);
            BinaryPrimitives.WriteInt32LittleEndian(payload[12..], (int)JournalRecordKind.Full);
        });

        var error = await Within.Catch(() => StorageEnvironment.Open(dir, Options).Dispose(), TimeSpan.FromSeconds(10));

        Expect.Exception<StorageCorruptedException>(error);
        var report = await Within.Run(() => EnvironmentSnapshot.Check(dir), TimeSpan.FromSeconds(10));
        Assert.False(report.IsConsistent);
    }

    [Fact]
    public void A_data_file_of_format_1_is_refused_as_a_format_mismatch_and_nothing_is_changed()
    {
        // Format 1 wrote pages without transaction ids and journals without file headers: replaying them would be guessing.
        using var temp = new TempDirectory("forged");
        Crashed(temp);
        for (var slot = 0; slot < 2; slot++) RewriteHeader(temp.Path, slot, header => BinaryPrimitives.WriteInt32LittleEndian(header[8..], 1));
        var before = Directory.EnumerateFiles(temp.Path, "*", SearchOption.AllDirectories).Order().Select(f => (f, File.ReadAllBytes(f))).ToList();

        var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(temp.Path, Options).Dispose());

        Assert.Equal(StorageErrorCode.FormatMismatch, error.ErrorCode);
        Assert.Contains("format 1", error.Message, StringComparison.Ordinal);
        var after = Directory.EnumerateFiles(temp.Path, "*", SearchOption.AllDirectories).Order().Select(f => (f, File.ReadAllBytes(f))).ToList();
        Assert.Equal(before.Select(x => x.f), after.Select(x => x.f));
        for (var i = 0; i < before.Count; i++) Assert.True(before[i].Item2.AsSpan().SequenceEqual(after[i].Item2), $"{before[i].f} changed");
    }

    [Fact]
    public async Task A_branch_pointing_twice_at_one_leaf_fails_a_scan_instead_of_returning_entries_again()
    {
        using var temp = new TempDirectory("forged");
        using (var env = StorageEnvironment.Open(temp.Path, Options))
        {
            using var tx = env.BeginWrite();
            var tree = tx.CreateTree("t");
            for (var i = 0; i < 5_000; i++) tree.Put(TestData.Key($"k{i:D5}"), TestData.Value(i, 100));
            tx.Commit();
        }
        long root;
        using (var env = StorageEnvironment.Open(temp.Path, Options))
        using (var read = env.BeginRead())
        {
            var state = read.OpenTree("t").Btree.State;
            Assert.Equal(2, state.Depth);
            root = state.RootPage;
        }
        // Every entry of the root points at its first leaf, and the page's checksum is made right again.
        var page = DataFileInspector.ReadPage(temp.Path, root);
        unsafe
        {
            fixed (byte* p = page)
            {
                var branch = Storage.Trees.TreePage.Open(p, root);
                var first = branch.GetChild(0);
                for (var i = 1; i < branch.Count; i++) branch.SetChild(i, first);
                ((PageHeader*)p)->Checksum = Crc32C.ComputePage(p, PageLayout.PageSizeBytes);
            }
        }
        using (var handle = File.OpenHandle(DataFileInspector.PathOf(temp.Path), FileMode.Open, FileAccess.ReadWrite))
        {
            RandomAccess.Write(handle, page, root * PageLayout.PageSizeBytes);
        }

        await Within.Run(() =>
        {
            using var env = StorageEnvironment.Open(temp.Path, Options);
            using var read = env.BeginRead();
            var forward = Assert.Throws<StorageCorruptedException>(() => read.OpenTree("t").Range(default, default).Count());
            Assert.Contains("do not come after", forward.Message, StringComparison.Ordinal);
            Assert.Throws<StorageCorruptedException>(() => read.OpenTree("t").Range(default, default, reverse: true).Count());
        });
        // The inspection tool's listing of the entries says so too, rather than listing the leaf again.
        await Within.Run(() =>
        {
            using var snapshot = EnvironmentSnapshot.Open(temp.Path);
            var tree = SnapshotTrees.ListTrees(snapshot).Single(t => t.Name == "t");
            var error = Assert.Throws<InspectionException>(() => SnapshotTrees.ForEachEntry(snapshot, tree.Header, (_, _) => { }));
            Assert.Contains("more than once", error.Message, StringComparison.Ordinal);
        });
    }

    private static unsafe void RewriteHeader(string dir, int slot, SpanAction header)
    {
        var page = DataFileInspector.ReadPage(dir, slot);
        var span = page.AsSpan(PageLayout.HeaderSizeBytes, Storage.State.FileHeader.SizeBytes);
        header(span);
        span.Slice(Storage.State.FileHeader.ChecksumOffset, 4).Clear();
        BinaryPrimitives.WriteUInt32LittleEndian(span[Storage.State.FileHeader.ChecksumOffset..], Crc32C.Compute(span));
        fixed (byte* p = page) ((PageHeader*)p)->Checksum = Crc32C.ComputePage(p, PageLayout.PageSizeBytes);
        using var handle = File.OpenHandle(DataFileInspector.PathOf(dir), FileMode.Open, FileAccess.ReadWrite);
        RandomAccess.Write(handle, page, slot * (long)PageLayout.PageSizeBytes);
    }

    /// <summary>Changes an entry's header (and payload) and stamps its checksum again.</summary>
    private static unsafe void RewriteEntry(JournalEntryInfo entry, SpanAction2 change)
    {
        var bytes = new byte[JournalEntryHeader.SizeBytes + entry.PayloadBytes];
        using var handle = File.OpenHandle(entry.Path, FileMode.Open, FileAccess.ReadWrite);
        RandomAccess.Read(handle, bytes, entry.OffsetBytes);
        change(bytes.AsSpan(0, JournalEntryHeader.SizeBytes), bytes.AsSpan(JournalEntryHeader.SizeBytes));
        var transactionId = BinaryPrimitives.ReadInt64LittleEndian(bytes.AsSpan(16));
        fixed (byte* p = bytes)
        {
            ((JournalEntryHeader*)p)->Checksum = JournalEntryBuilder.ComputeChecksum(p, entry.PayloadBytes, transactionId);
        }
        RandomAccess.Write(handle, bytes, entry.OffsetBytes);
    }

    private delegate void SpanAction(Span<byte> span);

    private delegate void SpanAction2(Span<byte> header, Span<byte> payload);
}
