using System.Text.Json;
using Storage.Inspect.Commands;
using Storage.Inspection;
using Storage.Paging;
using static Storage.Inspect.Tests.TestEnvironments;

namespace Storage.Inspect.Tests;

public class CommandTests
{
    [Fact]
    public void Check_consistent_exits_0_and_json_says_so()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path);
        Assert.Equal(0, Run(out var text, out var err, "check", dir.Path));
        Assert.Contains("consistent", text);
        Assert.Contains("2 trees", text);
        Assert.Equal("", err);
        Assert.Equal(0, Run(out var json, out _, "check", "--json", dir.Path));
        using var doc = JsonDocument.Parse(json);
        Assert.True(doc.RootElement.GetProperty("consistent").GetBoolean());
        Assert.Equal(2, doc.RootElement.GetProperty("trees").GetInt32());
    }

    [Fact]
    public void Check_damaged_exits_1_naming_page_tree_and_offset()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path);
        var leaf = FindPage(dir.Path, PageKind.Leaf, "users");
        FlipByte(dir.Path, leaf * PageLayout.PageSizeBytes + 5000);
        Assert.Equal(1, Run(out var text, out _, "check", dir.Path));
        Assert.Contains($"error [checksum] page {leaf}, tree 'users', file data.storage, offset {leaf * PageLayout.PageSizeBytes + 20}", text);
        Assert.Contains("NOT consistent", text);
    }

    [Theory]
    [InlineData("check")]
    [InlineData("info")]
    [InlineData("trees")]
    [InlineData("stat")]
    [InlineData("pages")]
    [InlineData("journals")]
    [InlineData("freespace")]
    [InlineData("dump")]
    public void Missing_or_garbage_environment_is_a_one_line_error(string command)
    {
        using var dir = new TempDir();
        Assert.Equal(1, Run(out _, out var err, command, dir.Sub("nothing")));
        Assert.StartsWith("error: no environment directory", err);
        Assert.Single(err.TrimEnd().Split('\n'));
        Directory.CreateDirectory(dir.Sub("garbage"));
        File.WriteAllBytes(Path.Combine(dir.Sub("garbage"), DataFile.FileName), new byte[3 * PageLayout.PageSizeBytes + 17]);
        Assert.Equal(1, Run(out var text, out err, command, dir.Sub("garbage")));
        Assert.Contains("neither file header is valid", text + err);
        Assert.DoesNotContain("   at ", text + err);
    }

    [Fact]
    public void Usage_errors_exit_2()
    {
        Assert.Equal(2, Run(out _, out var err, "nonsense"));
        Assert.Contains("unknown command", err);
        Assert.Equal(2, Run(out _, out err, "page", "/tmp"));
        Assert.Contains("usage: storage-inspect page", err);
        Assert.Equal(2, Run(out _, out _, "check", "--bogus", "/tmp"));
        Assert.Equal(2, Run(out _, out _));
    }

    [Fact]
    public void Info_shows_slots_journals_and_lock_while_open()
    {
        using var dir = new TempDir();
        using (var env = StorageEnvironment.Open(dir.Path, Quiet))
        {
            Fill(env, 100, 1);
            Assert.Equal(0, Run(out var text, out _, "info", dir.Path));
            Assert.Contains("locked          yes", text);
            Assert.Contains("header slot 0   sequence", text);
            Assert.Contains("header slot 1   sequence", text);
            Assert.Contains("2 journal entries after the last sync", text);
            Assert.Contains(".journal", text);
            Assert.Equal(0, Run(out var json, out _, "info", "--json", dir.Path));
            using var doc = JsonDocument.Parse(json);
            Assert.True(doc.RootElement.GetProperty("locked").GetBoolean());
            Assert.Equal(3, doc.RootElement.GetProperty("formatVersion").GetInt32());
            Assert.Equal(8192, doc.RootElement.GetProperty("pageSize").GetInt32());
            Assert.Equal(2, doc.RootElement.GetProperty("slots").GetArrayLength());
        }
        Assert.Equal(0, Run(out var after, out _, "info", dir.Path));
        Assert.Contains("locked          no", after);
    }

    [Fact]
    public void Info_reports_an_invalid_header_slot()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path, 10, 0);
        FlipByte(dir.Path, 100); // slot 0
        Assert.Equal(0, Run(out var text, out _, "info", dir.Path));
        Assert.Contains("header slot 0   invalid", text);
    }

    [Fact]
    public void Trees_lists_entries_depth_and_pages()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path);
        Assert.Equal(0, Run(out var text, out _, "trees", dir.Path));
        var users = text.Split('\n').Single(l => l.StartsWith("users", StringComparison.Ordinal));
        Assert.Contains("2,000", users);
        Assert.Equal(0, Run(out var json, out _, "trees", "--json", dir.Path));
        using var doc = JsonDocument.Parse(json);
        var blobs = doc.RootElement.EnumerateArray().Single(t => t.GetProperty("name").GetString() == "blobs");
        Assert.Equal(20, blobs.GetProperty("entries").GetInt64());
        Assert.True(blobs.GetProperty("overflowPages").GetInt64() >= 20);
        Assert.True(blobs.GetProperty("usedBytes").GetInt64() <= blobs.GetProperty("allocatedBytes").GetInt64());
    }

    [Fact]
    public void Stat_and_freespace_show_free_pages_by_section()
    {
        using var dir = new TempDir();
        using (var env = StorageEnvironment.Open(dir.Path, Quiet))
        {
            Fill(env, 3000, 5);
            using var tx = env.BeginWrite();
            tx.DeleteTree("blobs");
            tx.Commit();
        }
        Assert.Equal(0, Run(out var text, out _, "stat", dir.Path));
        Assert.Contains("Page size: 8192", text);
        Assert.Contains("Free pages by section", text);
        Assert.Equal(0, Run(out var json, out _, "stat", "--json", dir.Path));
        using var doc = JsonDocument.Parse(json);
        var free = doc.RootElement.GetProperty("freePages").GetInt64();
        Assert.True(free > 0);
        Assert.Equal(free, doc.RootElement.GetProperty("freeBySection").EnumerateArray().Sum(s => s.GetProperty("freePages").GetInt64()));
        Assert.Equal(0, Run(out var fs, out _, "freespace", dir.Path));
        Assert.Matches(@"\n\s*0\s+0-\d+\s", fs);
        Assert.Equal(0, Run(out var fsJson, out _, "freespace", "--json", dir.Path));
        using var fsDoc = JsonDocument.Parse(fsJson);
        Assert.Equal(free, fsDoc.RootElement.GetProperty("freePages").GetInt64());
    }

    [Fact]
    public void Pages_has_one_row_per_page_and_page_decodes_one()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path, 300, 2);
        Assert.Equal(0, Run(out var json, out _, "pages", "--json", dir.Path));
        using var doc = JsonDocument.Parse(json);
        var rows = doc.RootElement.EnumerateArray().ToList();
        Assert.Equal("header", rows[0].GetProperty("type").GetString());
        Assert.Equal("bitmap", rows[2].GetProperty("type").GetString());
        var overflow = rows.First(r => r.GetProperty("type").GetString() == "overflow");
        Assert.Equal("blobs", overflow.GetProperty("tree").GetString());
        Assert.True(overflow.GetProperty("overflow").GetInt32() >= 1);
        var leaf = rows.First(r => r.GetProperty("type").GetString() == "leaf" && r.GetProperty("tree").GetString() == "users");
        Assert.Equal(0, Run(out var table, out _, "pages", dir.Path));
        Assert.Contains("leaf", table);

        var id = leaf.GetProperty("id").GetInt64();
        Assert.Equal(0, Run(out var page, out _, "page", dir.Path, id.ToString()));
        Assert.Contains("checksum         ", page);
        Assert.Contains("(ok)", page);
        Assert.Contains("key-000000", page); // printable form
        Assert.Contains("6b65792d303030303030", page); // hex form
        Assert.Equal(0, Run(out var pageJson, out _, "page", "--json", dir.Path, id.ToString()));
        Assert.Contains("\"nodes\"", pageJson);
        Assert.Equal(1, Run(out _, out var err, "page", dir.Path, "99999999"));
        Assert.Contains("past the end of the data file", err);
    }

    [Fact]
    public void Page_reports_a_damaged_page_without_crashing()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path, 300, 0);
        var leaf = FindPage(dir.Path, PageKind.Leaf, "users");
        FlipByte(dir.Path, leaf * PageLayout.PageSizeBytes + 32); // first slot offset
        Assert.Equal(1, Run(out var text, out _, "page", dir.Path, leaf.ToString()));
        Assert.Contains("MISMATCH", text);
        Assert.Contains("problem:", text);
    }

    [Fact]
    public void Dump_and_load_round_trip_including_overflow_values()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path, 1500, 6);
        var dumpPath = dir.Sub("all.dump");
        Assert.Equal(0, Run(out _, out _, "dump", "--output", dumpPath, dir.Path));
        var dump = File.ReadAllText(dumpPath);
        // Printable keys as text, random values as hex.
        Assert.StartsWith("VERSION=3\nformat=rendered\ntype=btree\ndatabase=blobs\nentries=6\nHEADER=END\n key-000000\n hex:" + Convert.ToHexStringLower(Value(1000, 3000)) + "\n key-000001\n", dump);
        Assert.Contains("database=users", dump);
        Assert.Equal(0, Run(out var loaded, out _, "load", dumpPath, dir.Sub("copy")));
        Assert.Contains("loaded 2 trees, 1506 entries", loaded);
        Assert.Equal(0, Run(out var again, out _, "dump", dir.Sub("copy")));
        Assert.Equal(dump, again.ReplaceLineEndings("\n"));
        using var env = StorageEnvironment.Open(dir.Sub("copy"));
        using var tx = env.BeginRead();
        Assert.Equal(Value(1005, 3000 + 5 * 500), tx.OpenTree("blobs").Get(Key(5)));

        // --hex: every line hex, as mdb_dump writes; it loads back to the same entries.
        var hexPath = dir.Sub("all.hex.dump");
        Assert.Equal(0, Run(out _, out _, "dump", "--hex", "--output", hexPath, dir.Path));
        var hexDump = File.ReadAllText(hexPath);
        Assert.StartsWith("VERSION=3\nformat=bytevalue\ntype=btree\ndatabase=blobs\nentries=6\nHEADER=END\n 6b65792d303030303030\n " + Convert.ToHexStringLower(Value(1000, 3000)) + "\n", hexDump);
        Assert.Equal(0, Run(out _, out _, "load", hexPath, dir.Sub("copy-hex")));
        Assert.Equal(0, Run(out var fromHex, out _, "dump", dir.Sub("copy-hex")));
        Assert.Equal(dump, fromHex.ReplaceLineEndings("\n"));

        Assert.Equal(0, Run(out var one, out _, "dump", "--tree", "users", dir.Path));
        Assert.DoesNotContain("database=blobs", one);
        Assert.Equal(1, Run(out _, out var err, "dump", "--tree", "nope", dir.Path));
        Assert.Contains("no tree named 'nope'", err);
    }

    [Fact]
    public void Load_rejects_a_broken_dump_with_line_number()
    {
        using var dir = new TempDir();
        var path = dir.Sub("bad.dump");
        File.WriteAllText(path, "VERSION=3\nformat=bytevalue\ndatabase=x\nHEADER=END\n 0102\n zz\nDATA=END\n");
        Assert.Equal(1, Run(out _, out var err, "load", path, dir.Sub("target")));
        Assert.Contains("bad.dump:6: a data line is not hex", err);
    }

    [Fact]
    public void Journals_lists_entries_links_and_damage()
    {
        using var dir = new TempDir();
        var crashed = dir.Sub("crashed");
        using (var env = StorageEnvironment.Open(dir.Sub("live"), Quiet))
        {
            Fill(env, 300, 2);
            Assert.Equal(0, Run(out var text, out _, "journals", dir.Sub("live")));
            Assert.Contains("1-2", text);
            Assert.Equal(0, Run(out var json, out _, "journals", "--json", dir.Sub("live")));
            using var doc = JsonDocument.Parse(json);
            var file = doc.RootElement.GetProperty("files")[0];
            Assert.Equal(2, file.GetProperty("entries").GetInt32());
            Assert.Equal(1, file.GetProperty("links").GetInt32());
            Assert.True(file.GetProperty("uncompressedBytes").GetInt64() >= file.GetProperty("storedBytes").GetInt64());
            CopyFiles(dir.Sub("live"), crashed);
        }
        var journal = Directory.GetFiles(Path.Combine(crashed, "Journals"), "*.journal").Order().First();
        using (var f = File.Open(journal, FileMode.Open))
        {
            f.Position = 4096 + 300;
            f.WriteByte(0xAB);
        }
        Assert.Equal(1, Run(out var damaged, out _, "journals", crashed));
        Assert.Contains("damaged at offset 4096, 1 valid entries follow (tx 2-2)", damaged);
        Assert.Contains("DiscardAfterDamage would keep transactions up to 0 and lose 1 valid later entry (transactions 2-2", damaged);
    }

    [Fact]
    public void Map_writes_an_svg()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path, 500, 3);
        var svg = dir.Sub("map.svg");
        Assert.Equal(0, Run(out var text, out _, "map", "--output", svg, dir.Path));
        Assert.Contains("wrote", text);
        var content = File.ReadAllText(svg);
        Assert.StartsWith("<svg", content);
        Assert.Contains(MapCommand.Color(PageKind.Leaf), content);
        Assert.Contains(MapCommand.Color(PageKind.Overflow), content);
        Assert.Equal(2, Run(out _, out _, "map", dir.Path));
    }

    [LinuxOnlyFact("/proc/PID/smaps_rollup")]
    public void Memory_reads_smaps_rollup()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path, 100, 0);
        Assert.Equal(0, Run(out var text, out _, "memory", dir.Path));
        Assert.Contains("Rss:", text);
        Assert.Contains("Private_Dirty:", text);
        Assert.Equal(0, Run(out var json, out _, "memory", "--json", "--pid", Environment.ProcessId.ToString()));
        using var doc = JsonDocument.Parse(json);
        Assert.True(doc.RootElement.GetProperty("bytes").GetProperty("Rss").GetInt64() > 0);
        Assert.Equal(1, Run(out _, out var err, "memory", "--pid", "999999999"));
        Assert.StartsWith("error: cannot read /proc/999999999/smaps_rollup", err);
    }

    [Fact]
    public void Copy_compact_shrinks_and_keeps_every_entry()
    {
        using var dir = new TempDir();
        using (var env = StorageEnvironment.Open(dir.Sub("src"), Quiet))
        {
            Fill(env, 4000, 10);
            using var tx = env.BeginWrite();
            var users = tx.OpenTree("users");
            for (var i = 0; i < 4000; i += 2) users.Delete(Key(i));
            tx.Commit();
            // Copied while the source is open: read without its lock.
            Assert.Equal(0, Run(out var text, out _, "copy", "--compact", dir.Sub("src"), dir.Sub("dst")));
            Assert.Contains("copied 2 trees, 2,010 entries", text);
        }
        var source = EnvironmentSnapshot.Check(dir.Sub("src"));
        var target = EnvironmentSnapshot.Check(dir.Sub("dst"));
        Assert.True(target.IsConsistent, string.Join("\n", target.Problems));
        Assert.True(target.PagesInUseOrFree < source.PagesInUseOrFree);
        Assert.Equal(0, Run(out var a, out _, "dump", dir.Sub("src")));
        Assert.Equal(0, Run(out var b, out _, "dump", dir.Sub("dst")));
        Assert.Equal(a, b);
        Assert.Equal(1, Run(out _, out var err, "copy", "--compact", dir.Sub("src"), dir.Sub("dst")));
        Assert.Contains("is not empty", err);
    }

    /// <summary>
    /// A copy of a live environment whose flusher keeps overwriting pages is one committed state, never a mix: every
    /// transaction of the writer sets all keys to the same generation, so a mixed copy would hold two generations.
    /// </summary>
    [Fact]
    public async Task Copy_compact_of_a_busy_live_environment_is_one_committed_state()
    {
        using var dir = new TempDir();
        const int keys = 5_000;
        using var env = StorageEnvironment.Open(dir.Sub("src"), Quiet with { FlushInterval = TimeSpan.FromMilliseconds(1), SyncInterval = TimeSpan.FromMilliseconds(1), ScratchBudgetBytes = 1 << 20 });
        Generation(env, 0, keys);
        using var stop = new CancellationTokenSource();
        var writer = Task.Run(() =>
        {
            for (var generation = 1; !stop.IsCancellationRequested; generation++) Generation(env, generation, keys);
        }, TestContext.Current.CancellationToken);
        var copies = 0;
        try
        {
            for (var copy = 0; copy < 8; copy++)
            {
                var target = dir.Sub($"dst{copy}");
                if (Run(out var text, out var err, "copy", "--compact", dir.Sub("src"), target) != 0)
                {
                    // The tool gives up, as it says it does, when the environment changed under each of its attempts (a
                    // slow machine can make every attempt outlast a flush): that leaves no copy, never a wrong one.
                    Assert.Contains("changed under the copy", err);
                    Assert.False(Directory.Exists(target) && Directory.EnumerateFileSystemEntries(target).Any(), "a copy given up leaves nothing");
                    continue;
                }
                copies++;
                using var copied = StorageEnvironment.Open(target, Quiet);
                using var read = copied.BeginRead();
                var tree = read.OpenTree("gen");
                Assert.Equal(keys, tree.Count);
                var generations = new HashSet<string>();
                var cursor = tree.CreateCursor();
                for (var ok = cursor.SeekFirst(); ok; ok = cursor.MoveNext()) generations.Add(System.Text.Encoding.ASCII.GetString(cursor.Value)[..12]);
                Assert.True(generations.Count == 1, $"copy {copy} mixes generations {string.Join(", ", generations.Order())}; the tool said: {text} {err}");
            }
            Assert.True(copies > 0, "no copy of the busy environment was made");
        }
        finally
        {
            stop.Cancel();
            await writer;
        }
    }

    /// <summary>One transaction that sets every key to values of the generation (large enough that pages split and move).</summary>
    private static void Generation(StorageEnvironment env, int generation, int keys)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("gen");
        for (var i = 0; i < keys; i++) tree.Put(Key(i), System.Text.Encoding.ASCII.GetBytes($"{generation:D12}-{new string('v', (i + generation) % 90)}"));
        tx.Commit();
    }

    [Fact]
    public void Commands_on_a_truncated_file_report_and_do_not_crash()
    {
        using var dir = new TempDir();
        CreateSample(dir.Path, 2000, 5);
        using (var file = File.Open(Path.Combine(dir.Path, DataFile.FileName), FileMode.Open)) file.SetLength(40 * PageLayout.PageSizeBytes);
        foreach (var command in new[] { "check", "trees", "stat", "pages", "freespace", "dump" })
        {
            var code = Run(out var text, out var err, command, dir.Path);
            Assert.True(code == 1, $"{command}: exit {code}");
            Assert.DoesNotContain("   at ", text + err);
        }
        Assert.Equal(1, Run(out var check, out _, "check", dir.Path));
        Assert.Contains("truncated", check);
        Assert.Equal(0, Run(out var info, out _, "info", dir.Path));
        Assert.Contains("truncated", info);
    }
}
