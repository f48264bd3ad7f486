using System.Security.Cryptography;
using System.Text;
using Storage.Commit;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
using Storage.Trees;

namespace Storage.Fuzz;

/// <summary>
/// Writes the seed corpus from real environments. The environments are made through the public API only (plus the
/// crash test seam, which stops an environment without flushing, as a killed process would), and the seeds are
/// slices of their files cut without reading the formats: whole pages, journal files up to their last written
/// 4 KiB block, and the sparse framing of whole directories. The few format-aware choices (which pages are tree
/// pages, what a diff looks like) are left to the library itself (<see cref="TreePage.Open"/>,
/// <see cref="PageDiff.Encode"/>), so that regenerating after a format change needs no change here.
/// </summary>
internal static unsafe class CorpusGenerator
{
    private const int PageSize = PageLayout.PageSizeBytes;
    private const int MaxTreePagesPerEnvironment = 6;
    private const int MaxDiffsPerEnvironment = 6;

    /// <summary>No background flush or sync: what a scenario commits stays in the journal until it says otherwise.</summary>
    private static readonly StorageOptions s_quiet = new()
    {
        FlushInterval = TimeSpan.FromMilliseconds(600_000),
        SyncInterval = TimeSpan.FromMilliseconds(600_000),
        MinJournalFileSizeBytes = 64 << 10,
        MaxJournalFileSizeBytes = 256 << 10,
        IoBackend = IoBackend.Managed,
    };

    private sealed record Scenario(string Name, StorageOptions Options, Action<StorageEnvironment, List<byte[]>> Fill, bool Crash);

    public static void Generate(string corpusDirectory, TextWriter log)
    {
        var scenarios = new Scenario[]
        {
            new("healthy", s_quiet, (env, versions) => Commit(env, "users", 0, 300, 40), Crash: false),
            new("unsynced", s_quiet, Unsynced, Crash: true),
            new("overflow", s_quiet, Overflow, Crash: true),
            new("many-trees", s_quiet, ManyTrees, Crash: false),
            new("deletes", s_quiet, Deletes, Crash: true),
            new("compressed", s_quiet with { CompressionThresholdBytes = 4096 }, Compressed, Crash: true),
            new("two-journals", s_quiet with { MaxJournalFileSizeBytes = 64 << 10 }, TwoJournals, Crash: true),
        };
        foreach (var target in FuzzTargets.All)
        {
            var directory = Path.Combine(corpusDirectory, target.Name);
            if (Directory.Exists(directory)) Directory.Delete(directory, recursive: true);
            Directory.CreateDirectory(directory);
        }
        var written = new HashSet<string>();
        foreach (var scenario in scenarios)
        {
            using var scratch = new ScratchDirectory("corpus-" + scenario.Name);
            var envDirectory = scratch.Combine("env");
            var versions = new List<byte[]>();
            var env = StorageEnvironment.Open(envDirectory, scenario.Options);
            scenario.Fill(env, versions);
            if (scenario.Crash) env.SimulateCrash();
            else env.Dispose();

            var data = File.ReadAllBytes(Path.Combine(envDirectory, DataFile.FileName));
            var framing = EnvironmentFraming.Read(envDirectory, EnvironmentFraming.RepairChecksumsFlag);
            Write(corpusDirectory, "environment", $"{scenario.Name}.env", framing.Encode(), written);
            if (scenario.Name is "unsynced" or "overflow")
            {
                // Only the engine's open and read: a problem of the read-only readers ends an input before it reaches them.
                Write(corpusDirectory, "environment", $"{scenario.Name}-open-only.env",
                    new EnvironmentFraming { Flags = EnvironmentFraming.RepairChecksumsFlag | EnvironmentFraming.SkipReadersFlag }.WithFilesOf(framing).Encode(), written);
                // The same files with their checksums taken as they are: the checksum checks themselves are targets too.
                Write(corpusDirectory, "environment", $"{scenario.Name}-raw.env", new EnvironmentFraming { Flags = 0 }.WithFilesOf(framing).Encode(), written);
                Write(corpusDirectory, "environment", $"{scenario.Name}-torn.env", TearLastJournal(framing).Encode(), written);
            }

            if (scenario.Name == "healthy")
            {
                // A data file shorter than its header says: the mapped file must not be read past its end.
                Write(corpusDirectory, "environment", "healthy-truncated.env", Truncated(framing).Encode(), written);
            }

            Write(corpusDirectory, "file-header", $"{scenario.Name}-slot0.page", data.AsSpan(0, PageSize).ToArray(), written);
            Write(corpusDirectory, "file-header", $"{scenario.Name}-slot1.page", data.AsSpan(PageSize, PageSize).ToArray(), written);
            if (scenario.Name == "healthy") Write(corpusDirectory, "file-header", "healthy-both.pages", data.AsSpan(0, 2 * PageSize).ToArray(), written);

            var treePages = 0;
            for (var number = 2L; number < data.Length / PageSize && treePages < MaxTreePagesPerEnvironment; number++)
            {
                var page = data.AsSpan((int)(number * PageSize), PageSize).ToArray();
                if (!IsTreePage(page, number)) continue;
                if (Write(corpusDirectory, "tree-page", $"{scenario.Name}-page{number}.page", page, written)) treePages++;
            }

            foreach (var (number, path) in JournalEntryReader.ListFiles(Path.Combine(envDirectory, Storage.State.StorageEnvironmentNames.JournalDirectory)))
            {
                var used = UsedPrefix(File.ReadAllBytes(path));
                if (used.Length > 0) Write(corpusDirectory, "journal-entry", $"{scenario.Name}-journal{number}.journal", used, written);
            }

            var diffs = 0;
            versions.Insert(0, []);
            versions.Add(data);
            for (var v = 1; v < versions.Count && diffs < MaxDiffsPerEnvironment; v++)
            {
                foreach (var diff in Diffs(versions[v - 1], versions[v]))
                {
                    if (diffs >= MaxDiffsPerEnvironment) break;
                    if (Write(corpusDirectory, "page-diff", $"{scenario.Name}-v{v}-{diffs}.diff", diff, written)) diffs++;
                }
            }
            log.WriteLine($"{scenario.Name}: data file {data.Length / 1024} KiB, framed {framing.Encode().Length / 1024} KiB, {treePages} tree pages, {diffs} diffs");
        }
        // Degenerate inputs every target must refuse cleanly.
        foreach (var target in FuzzTargets.All) Write(corpusDirectory, target.Name, "empty", [], written);
        log.WriteLine($"{written.Count} seeds in {corpusDirectory}");
    }

    private static void Unsynced(StorageEnvironment env, List<byte[]> versions)
    {
        Commit(env, "users", 0, 200, 40);
        env.Checkpoint();
        versions.Add(ReadDataFile(env));
        for (var t = 0; t < 4; t++) Commit(env, "users", 1000 + t * 10, 10, 60);
    }

    private static void Overflow(StorageEnvironment env, List<byte[]> versions)
    {
        Commit(env, "blobs", 0, 4, 3000);
        env.Checkpoint();
        versions.Add(ReadDataFile(env));
        Commit(env, "blobs", 10, 2, 20_000);
        Commit(env, "small", 0, 20, 30);
    }

    private static void ManyTrees(StorageEnvironment env, List<byte[]> versions)
    {
        Commit(env, "deep", 0, 1500, 40);
        env.Checkpoint();
        versions.Add(ReadDataFile(env));
        for (var t = 0; t < 5; t++) Commit(env, $"tree-{t}", t, 5 + t, 20 + t * 200);
        Commit(env, "deep", 5000, 30, 40);
        env.Checkpoint();
        versions.Add(ReadDataFile(env));
    }

    private static void Deletes(StorageEnvironment env, List<byte[]> versions)
    {
        Commit(env, "churn", 0, 600, 50);
        env.Checkpoint();
        versions.Add(ReadDataFile(env));
        using (var tx = env.BeginWrite())
        {
            var tree = tx.OpenTree("churn");
            for (var i = 0; i < 600; i += 2) tree.Delete(Key(i));
            tx.Commit();
        }
        env.Checkpoint();
        versions.Add(ReadDataFile(env));
        using (var tx = env.BeginWrite())
        {
            tx.CreateTree("gone").Put(Key(1), Value(1, 10));
            tx.Commit();
        }
        using (var tx = env.BeginWrite())
        {
            tx.DeleteTree("gone");
            tx.Commit();
        }
    }

    private static void Compressed(StorageEnvironment env, List<byte[]> versions)
    {
        using var tx = env.BeginWrite();
        var tree = tx.CreateTree("text");
        for (var i = 0; i < 40; i++) tree.Put(Key(i), Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat($"compressible text {i} ", 60))));
        tx.Commit();
    }

    private static void TwoJournals(StorageEnvironment env, List<byte[]> versions)
    {
        for (var t = 0; t < 12; t++) Commit(env, "rolling", t * 4, 4, 2000);
    }

    private static void Commit(StorageEnvironment env, string tree, int firstKey, int count, int valueBytes)
    {
        using var tx = env.BeginWrite();
        var target = tx.OpenOrCreateTree(tree);
        for (var i = firstKey; i < firstKey + count; i++) target.Put(Key(i), Value(i, valueBytes));
        tx.Commit();
    }

    private static byte[] Key(int i) => Encoding.ASCII.GetBytes($"key-{i:D6}");

    private static byte[] Value(int i, int size)
    {
        var value = new byte[size];
        new Random(i).NextBytes(value);
        return value;
    }

    private static byte[] ReadDataFile(StorageEnvironment env)
    {
        using var handle = File.OpenHandle(Path.Combine(env.DirectoryPath, DataFile.FileName), FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        var bytes = new byte[RandomAccess.GetLength(handle)];
        RandomAccess.Read(handle, bytes, 0);
        return bytes;
    }

    /// <summary>Whether the library accepts the page as a tree page (the generator does not read page headers itself).</summary>
    private static bool IsTreePage(byte[] page, long number)
    {
        fixed (byte* p = page)
        {
            try
            {
                TreePage.Open(p, number);
                return true;
            }
            catch (StorageException)
            {
                return false;
            }
        }
    }

    /// <summary>The library's own diffs of every page that changed between two versions of the data file (new pages against zeros).</summary>
    private static List<byte[]> Diffs(byte[] before, byte[] after)
    {
        var diffs = new List<byte[]>();
        var output = new byte[2 * PageSize];
        for (var offset = 2 * PageSize; offset + PageSize <= after.Length; offset += PageSize)
        {
            var current = after.AsSpan(offset, PageSize);
            var baseline = offset + PageSize <= before.Length ? before.AsSpan(offset, PageSize) : new byte[PageSize];
            if (current.SequenceEqual(baseline)) continue;
            int size;
            fixed (byte* c = current)
            fixed (byte* b = baseline)
            {
                size = PageDiff.Encode(c, b, output, output.Length);
            }
            if (size > 0) diffs.Add(output.AsSpan(0, size).ToArray());
        }
        return diffs;
    }

    /// <summary>A journal file up to its last written 4 KiB block: the rest is the zeros it was pre-written with.</summary>
    private static byte[] UsedPrefix(byte[] journal)
    {
        var last = journal.AsSpan().LastIndexOfAnyExcept((byte)0);
        return last < 0 ? [] : journal.AsSpan(0, (int)AlignedBuffer.AlignUp(last + 1)).ToArray();
    }

    /// <summary>The same directory with the newest journal cut in the middle of what was written to it: a torn tail.</summary>
    private static EnvironmentFraming TearLastJournal(EnvironmentFraming framing)
    {
        // Without the repair flag: repaired, the half-zeroed entry would get a valid checksum again.
        var torn = new EnvironmentFraming { Flags = 0 }.WithFilesOf(framing);
        var last = torn.Files.Keys.Where(k => k > 0).DefaultIfEmpty(0).Max();
        if (last == 0) return torn;
        var used = UsedPrefix(torn.Files[last]).Length;
        var cut = torn.Files[last].ToArray();
        cut.AsSpan(used / 2).Clear();
        torn.Files[last] = cut;
        return torn;
    }

    /// <summary>The data file cut at the page boundary nearest to half of what was written to it.</summary>
    private static EnvironmentFraming Truncated(EnvironmentFraming framing)
    {
        var truncated = new EnvironmentFraming { Flags = framing.Flags }.WithFilesOf(framing);
        var data = truncated.Files[0];
        var used = data.AsSpan().LastIndexOfAnyExcept((byte)0) + 1;
        truncated.Files[0] = data.AsSpan(0, Math.Max(PageSize, used / 2 / PageSize * PageSize)).ToArray();
        return truncated;
    }

    /// <summary>Writes a seed unless an identical one was written already; true when written.</summary>
    private static bool Write(string corpusDirectory, string target, string name, byte[] bytes, HashSet<string> written)
    {
        var key = target + ":" + Convert.ToHexString(SHA256.HashData(bytes));
        if (!written.Add(key)) return false;
        File.WriteAllBytes(Path.Combine(corpusDirectory, target, name), bytes);
        return true;
    }
}
