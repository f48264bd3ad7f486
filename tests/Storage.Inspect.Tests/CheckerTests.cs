using Storage.Inspection;
using Storage.Paging;
using Storage.Platform;
using Storage.Trees;
using static Storage.Inspect.Tests.TestEnvironments;

namespace Storage.Inspect.Tests;

public class CheckerTests
{
    [Fact]
    public void Fresh_environment_is_consistent()
    {
        using var dir = new TempDir();
        using (StorageEnvironment.Open(dir.Path)) { }
        var report = EnvironmentSnapshot.Check(dir.Path);
        Assert.True(report.IsConsistent, string.Join("\n", report.Problems));
        Assert.Single(report.Trees);
        Assert.Equal(0, report.LeakedPages);
    }

    [Fact]
    public void Many_random_commits_and_deletes_stay_consistent_closed_and_open()
    {
        using var dir = new TempDir();
        var random = new Random(42);
        var expected = new Dictionary<string, SortedDictionary<int, int>>();
        using (var env = StorageEnvironment.Open(dir.Path, Quiet))
        {
            for (var round = 0; round < 60; round++)
            {
                using var tx = env.BeginWrite();
                var name = "t" + random.Next(4);
                var tree = tx.OpenOrCreateTree(name);
                if (!expected.TryGetValue(name, out var model)) expected[name] = model = [];
                for (var i = 0; i < 150; i++)
                {
                    var k = random.Next(3000);
                    if (random.Next(3) == 0)
                    {
                        tree.Delete(Key(k));
                        model.Remove(k);
                    }
                    else
                    {
                        var size = random.Next(10) == 0 ? 2100 + random.Next(20000) : random.Next(200);
                        tree.Put(Key(k), Value(k, size));
                        model[k] = size;
                    }
                }
                if (round == 40 && tx.DeleteTree("t3")) expected.Remove("t3");
                tx.Commit();
                if (round % 20 == 19)
                {
                    // While open: the state lives partly in the journal; the snapshot applies it without the lock.
                    var live = EnvironmentSnapshot.Check(dir.Path);
                    Assert.True(live.IsConsistent, string.Join("\n", live.Problems));
                    AssertCounts(live, expected);
                }
            }
        }
        var report = EnvironmentSnapshot.Check(dir.Path, collectPages: true);
        Assert.True(report.IsConsistent, string.Join("\n", report.Problems));
        AssertCounts(report, expected);
        Assert.Equal(report.PagesInUseOrFree, report.ReservedPages + report.ReachablePages + report.FreePages);
        Assert.True(report.FreePages > 0);
    }

    private static void AssertCounts(CheckReport report, Dictionary<string, SortedDictionary<int, int>> expected)
    {
        Assert.Equal(expected.Keys.Order(), report.Trees.Skip(1).Select(t => t.Name!).Order());
        foreach (var (name, model) in expected) Assert.Equal(model.Count, report.Trees.Single(t => t.Name == name).Entries);
    }

    [Fact]
    public void Flipped_byte_in_a_leaf_is_a_checksum_error_with_page_and_tree()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path);
        var leaf = FindPage(dir.Path, PageKind.Leaf, "users");
        FlipByte(dir.Path, leaf * PageLayout.PageSizeBytes + PageLayout.PageSizeBytes - 3);
        var report = EnvironmentSnapshot.Check(dir.Path);
        Assert.False(report.IsConsistent);
        var problem = Assert.Single(report.Problems, p => p.Kind == "checksum");
        Assert.Equal(leaf, problem.PageNumber);
        Assert.Equal("users", problem.Tree);
        Assert.Equal(leaf * PageLayout.PageSizeBytes + PageHeader.ChecksumOffset, problem.OffsetBytes);
    }

    [Fact]
    public void Damaged_overflow_run_is_found()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path);
        var run = FindPage(dir.Path, PageKind.OverflowContinuation, "blobs");
        FlipByte(dir.Path, run * PageLayout.PageSizeBytes + 100);
        var report = EnvironmentSnapshot.Check(dir.Path);
        Assert.Contains(report.Problems, p => p.Kind == "checksum" && p.Tree == "blobs" && p.Message.Contains("overflow run"));
    }

    [Fact]
    public void Wrong_page_number_and_bad_bounds_are_found_and_the_walk_goes_on()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path);
        var leaves = FindPages(dir.Path, PageKind.Leaf, "users");
        var leaf = leaves[0];
        FlipByte(dir.Path, leaf * PageLayout.PageSizeBytes); // page number
        var branch = leaves[1];
        FlipByte(dir.Path, branch * PageLayout.PageSizeBytes + 13); // Upper
        var report = EnvironmentSnapshot.Check(dir.Path);
        Assert.Contains(report.Problems, p => p.Kind == "page-number" && p.PageNumber == leaf);
        Assert.Contains(report.Problems, p => p.Kind == "node" && p.PageNumber == branch && p.Message.Contains("Upper"));
        Assert.Equal(leaves.Count - 2, report.Trees.Single(t => t.Name == "users").LeafPages);
        // The other tree is still walked in full.
        Assert.Equal(20, report.Trees.Single(t => t.Name == "blobs").Entries);
    }

    [Fact]
    public unsafe void Key_order_violation_is_found_even_with_a_valid_checksum()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path);
        var leaf = FindPage(dir.Path, PageKind.Leaf, "users");
        var path = Path.Combine(dir.Path, DataFile.FileName);
        var bytes = new byte[PageLayout.PageSizeBytes];
        using (var file = File.OpenHandle(path, FileMode.Open, FileAccess.ReadWrite))
        {
            RandomAccess.Read(file, bytes, leaf * PageLayout.PageSizeBytes);
            // Swap the first two slots (offset and key head): keys 0 and 1 change places.
            var first = bytes.AsSpan(PageLayout.HeaderSizeBytes, TreeNodeLayout.SlotSizeBytes).ToArray();
            bytes.AsSpan(PageLayout.HeaderSizeBytes + TreeNodeLayout.SlotSizeBytes, TreeNodeLayout.SlotSizeBytes).CopyTo(bytes.AsSpan(PageLayout.HeaderSizeBytes));
            first.CopyTo(bytes.AsSpan(PageLayout.HeaderSizeBytes + TreeNodeLayout.SlotSizeBytes));
            fixed (byte* p = bytes) ((PageHeader*)p)->Checksum = Crc32C.ComputePage(p, PageLayout.PageSizeBytes);
            RandomAccess.Write(file, bytes, leaf * PageLayout.PageSizeBytes);
        }
        var report = EnvironmentSnapshot.Check(dir.Path);
        var problem = Assert.Single(report.Problems, p => p.Kind == "key-order");
        Assert.Equal(leaf, problem.PageNumber);
        Assert.DoesNotContain(report.Problems, p => p.Kind == "checksum");
    }

    [Fact]
    public void Truncated_data_file_is_reported()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path);
        var path = Path.Combine(dir.Path, DataFile.FileName);
        var report0 = EnvironmentSnapshot.Check(dir.Path);
        using (var file = File.Open(path, FileMode.Open)) file.SetLength((report0.PagesInUseOrFree - 5) * PageLayout.PageSizeBytes + 100);
        var report = EnvironmentSnapshot.Check(dir.Path);
        Assert.Contains(report.Problems, p => p.Kind == "truncated");
        Assert.Contains(report.Problems, p => p.Kind == "file-length");
        Assert.False(report.IsConsistent);
    }

    [Fact]
    public void Data_file_cut_inside_the_headers_is_one_open_problem()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path, 10, 0);
        using (var file = File.Open(Path.Combine(dir.Path, DataFile.FileName), FileMode.Open)) file.SetLength(5000);
        var report = EnvironmentSnapshot.Check(dir.Path);
        var problem = Assert.Single(report.Problems);
        Assert.Equal("open", problem.Kind);
        Assert.Contains("neither file header is valid", problem.Message);
    }

    [Fact]
    public void Bitmap_bit_marking_a_used_page_free_and_a_free_page_used_are_found()
    {
        using var dir = new TempDir();
        using (var env = StorageEnvironment.Open(dir.Path, Quiet))
        {
            Fill(env, 2000, 5);
            using var tx = env.BeginWrite();
            var tree = tx.OpenTree("users");
            for (var i = 0; i < 1500; i++) tree.Delete(Key(i));
            tx.Commit();
        }
        var leaf = FindPage(dir.Path, PageKind.Leaf, "users");
        var free = FindPage(dir.Path, PageKind.Free);
        FlipBitmapBit(dir.Path, leaf);
        FlipBitmapBit(dir.Path, free);
        var report = EnvironmentSnapshot.Check(dir.Path);
        Assert.Contains(report.Problems, p => p.Kind == "free-space" && p.PageNumber == leaf);
        Assert.Contains(report.Problems, p => p.Kind == "leaked" && p.PageNumber == free);
        Assert.Equal(1, report.LeakedPages);
    }

    [Fact]
    public void Journal_entries_of_an_open_environment_are_applied_without_the_lock()
    {
        using var dir = new TempDir();
        using var env = StorageEnvironment.Open(dir.Path, Quiet);
        Fill(env, 500, 3);
        using var snapshot = EnvironmentSnapshot.Open(dir.Path);
        Assert.True(snapshot.JournalEntriesApplied >= 2);
        Assert.True(snapshot.JournalPageCount > 0);
        var report = snapshot.Check();
        Assert.True(report.IsConsistent, string.Join("\n", report.Problems));
        Assert.Equal(500, report.Trees.Single(t => t.Name == "users").Entries);
        // The engine still owns the directory: the lock is held and a write still works.
        using var tx = env.BeginWrite();
        tx.OpenTree("users").Put(Key(999_999), [1]);
        tx.Commit();
    }

    [Fact]
    public void Damaged_journal_entry_followed_by_valid_ones_is_reported_with_file_and_offset()
    {
        using var dir = new TempDir();
        var crashed = dir.Sub("crashed");
        using (var env = StorageEnvironment.Open(dir.Sub("live"), Quiet))
        {
            Fill(env, 300, 2);
            CopyFiles(dir.Sub("live"), crashed);
        }
        var journal = Directory.GetFiles(Path.Combine(crashed, "Journals"), "*.journal").Order().First();
        using (var file = File.Open(journal, FileMode.Open))
        {
            file.Position = 4096 + 200; // inside the first entry's payload (entries start after the file's 4 KiB header block)
            var b = file.ReadByte();
            file.Position = 4096 + 200;
            file.WriteByte((byte)(b ^ 0x55));
        }
        var report = EnvironmentSnapshot.Check(crashed);
        var problem = Assert.Single(report.Problems, p => p.Kind == "journal");
        Assert.Equal(4096, problem.OffsetBytes);
        Assert.Equal(journal, problem.File);
        Assert.Contains("valid later entries follow", problem.Message);
        Assert.Contains("DiscardAfterDamage keeps transactions up to 0", problem.Message);
    }

    [Fact]
    public void Crash_copy_with_intact_journal_is_consistent()
    {
        using var dir = new TempDir();
        var crashed = dir.Sub("crashed");
        using (var env = StorageEnvironment.Open(dir.Sub("live"), Quiet))
        {
            Fill(env, 300, 2);
            CopyFiles(dir.Sub("live"), crashed);
        }
        var report = EnvironmentSnapshot.Check(crashed);
        Assert.True(report.IsConsistent, string.Join("\n", report.Problems));
        Assert.Equal(300, report.Trees.Single(t => t.Name == "users").Entries);
    }
}
