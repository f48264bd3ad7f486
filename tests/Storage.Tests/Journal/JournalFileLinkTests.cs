using Storage.Tests.Support;

namespace Storage.Tests.JournalTests;

/// <summary>
/// A journal file that has another name as well (a hard link made by a backup tool, or another environment's link) is
/// never recycled: overwriting it would change what the other name holds. The journal removes only its own name.
/// </summary>
public sealed class A_journal_file_with_another_name
{
    private static readonly StorageOptions Options = TestOptions.JournalOnly with
    {
        MinJournalFileSizeBytes = 256 << 10,
        MaxJournalFileSizeBytes = 256 << 10,
    };

    [FactNeeding(Need.Linux, "Reading link counts")]
    public void Is_unlinked_when_retired_not_recycled()
    {
        using var temp = new TempDirectory();
        using var outside = new TempDirectory("outside");
        var journals = Path.Combine(temp.Path, "Journals");
        var link = Path.Combine(outside.Path, "copy.journal");
        using (var env = StorageEnvironment.Open(temp.Path, Options))
        {
            PutValues(env, round: 0);
            var first = Directory.GetFiles(journals, "*.journal").Order(StringComparer.Ordinal).First();
            Platform.Pal.HardLink(first, link);
            var linkedBytes = File.ReadAllBytes(link);

            // The same keys again and again with checkpoints: files retire and, without the link, would become spares.
            for (var round = 1; round < 40; round++)
            {
                PutValues(env, round);
                if (round % 3 == 2) env.Checkpoint();
            }

            Assert.False(File.Exists(first), "the retired file's name in the journal folder is gone");
            Assert.True(Directory.GetFiles(journals, "*.spare").Length > 0, "other retired files became spares");
            Assert.Equal(1u, Platform.Posix.LinkCount(link));
            // The file was still being appended to when it was linked: what it held then must be there unchanged.
            var written = linkedBytes.AsSpan().LastIndexOfAnyExcept((byte)0) + 1;
            Assert.True(written > 4096, "the linked file held entries");
            Assert.Equal(linkedBytes.AsSpan(0, written), File.ReadAllBytes(link).AsSpan(0, written));
        }
        using var reopened = StorageEnvironment.Open(temp.Path, Options);
        Assert.Equal(100, EnvHelpers.CountOf(reopened, "t"));
    }

    [FactNeeding(Need.Linux, "Reading link counts")]
    public void Left_as_a_spare_by_a_close_is_not_reused_by_the_next_open()
    {
        using var temp = new TempDirectory();
        using var outside = new TempDirectory("outside");
        var journals = Path.Combine(temp.Path, "Journals");
        using (var env = StorageEnvironment.Open(temp.Path, Options))
        {
            // A larger data file, so that the close keeps spares (it keeps them within a quarter of the data file).
            for (var start = 0; start < 8_000; start += 500) PutValues(env, round: start, count: 500, firstKey: start);
            env.Checkpoint();
            for (var round = 1; round < 40; round++)
            {
                PutValues(env, round);
                if (round % 3 == 2) env.Checkpoint();
            }
        }
        var spares = Directory.GetFiles(journals, "*.spare");
        Assert.NotEmpty(spares);
        var links = new List<(string Link, byte[] Bytes)>();
        foreach (var spare in spares)
        {
            var link = Path.Combine(outside.Path, Path.GetFileName(spare));
            Platform.Pal.HardLink(spare, link);
            links.Add((link, File.ReadAllBytes(link)));
        }

        using (var env = StorageEnvironment.Open(temp.Path, Options))
        {
            for (var round = 40; round < 80; round++)
            {
                PutValues(env, round);
                if (round % 3 == 2) env.Checkpoint();
            }
            Assert.Equal(8_000, EnvHelpers.CountOf(env, "t"));
        }

        foreach (var (link, bytes) in links)
        {
            Assert.Equal(1u, Platform.Posix.LinkCount(link));
            Assert.Equal(bytes, File.ReadAllBytes(link));
        }
    }

    private static void PutValues(StorageEnvironment env, int round, int count = 100, int firstKey = 0)
    {
        using var tx = env.BeginWrite();
        var tree = tx.OpenOrCreateTree("t");
        var random = new Random(round);
        var value = new byte[1000];
        for (var i = firstKey; i < firstKey + count; i++)
        {
            // Incompressible: the journal carries every byte, so files fill and retire.
            random.NextBytes(value);
            tree.Put(System.Text.Encoding.ASCII.GetBytes($"key{i:D6}"), value);
        }
        tx.Commit();
    }
}
