using System.Text;
using Storage.Allocation;
using Storage.Inspect;
using Storage.Inspection;
using Storage.Paging;
using Storage.Platform;

namespace Storage.Inspect.Tests;

/// <summary>A temporary directory, deleted on dispose.</summary>
internal sealed class TempDir : IDisposable
{
    public TempDir()
    {
        Path = System.IO.Path.Combine(System.IO.Path.GetTempPath(), "storage-inspect-" + Guid.NewGuid().ToString("N"));
        Directory.CreateDirectory(Path);
    }

    public string Path { get; }

    public string Sub(string name) => System.IO.Path.Combine(Path, name);

    public void Dispose()
    {
        try
        {
            Directory.Delete(Path, recursive: true);
        }
        catch (IOException)
        {
        }
    }
}

/// <summary>Environments written by the engine, and ways to damage them.</summary>
internal static class TestEnvironments
{
    /// <summary>No background flush or sync during a test: what is committed stays in the journal until dispose.</summary>
    public static readonly StorageOptions Quiet = new() { FlushInterval = TimeSpan.FromMilliseconds(600_000), SyncInterval = TimeSpan.FromMilliseconds(600_000) };

    public static byte[] Key(int i) => Encoding.ASCII.GetBytes($"key-{i:D6}");

    public static byte[] Value(int i, int size)
    {
        var value = new byte[size];
        new Random(i).NextBytes(value);
        return value;
    }

    /// <summary>Two trees: "users" with small values (several levels), "blobs" with overflow values.</summary>
    public static void CreateSample(string directory, int users = 2000, int blobs = 20)
    {
        using var env = StorageEnvironment.Open(directory, Quiet);
        Fill(env, users, blobs);
    }

    public static void Fill(StorageEnvironment env, int users, int blobs)
    {
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("users");
            for (var i = 0; i < users; i++) tree.Put(Key(i), Value(i, 40 + i % 60));
            tx.Commit();
        }
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("blobs");
            for (var i = 0; i < blobs; i++) tree.Put(Key(i), Value(1000 + i, 3000 + i * 500));
            tx.Commit();
        }
    }

    public static int Run(out string stdout, out string stderr, params string[] args)
    {
        var output = new StringWriter();
        var error = new StringWriter();
        var code = Cli.Run(args, output, error);
        stdout = output.ToString();
        stderr = error.ToString();
        return code;
    }

    /// <summary>The first page of the given kind in the given tree, found by the checker.</summary>
    public static long FindPage(string directory, PageKind kind, string? tree = null) => FindPages(directory, kind, tree).First();

    public static List<long> FindPages(string directory, PageKind kind, string? tree = null)
    {
        var found = new List<long>();
        var report = EnvironmentSnapshot.Check(directory, collectPages: true);
        var id = tree is null ? -1 : report.Trees.Single(t => t.Name == tree).TreeId;
        var pages = report.Pages!;
        for (var i = 0; i < pages.Length; i++)
        {
            if (pages[i].Kind == kind && (id < 0 || pages[i].TreeId == id)) found.Add(i);
        }
        return found.Count > 0 ? found : throw new InvalidOperationException($"no {kind} page");
    }

    public static void FlipByte(string directory, long offset)
    {
        using var file = File.Open(System.IO.Path.Combine(directory, DataFile.FileName), FileMode.Open, FileAccess.ReadWrite, FileShare.ReadWrite);
        file.Position = offset;
        var b = file.ReadByte();
        file.Position = offset;
        file.WriteByte((byte)(b ^ 0xFF));
    }

    /// <summary>Flips the bitmap bit of <paramref name="page"/> and re-stamps the bitmap page's checksum, so only the bit is wrong.</summary>
    public static unsafe void FlipBitmapBit(string directory, long page)
    {
        var path = System.IO.Path.Combine(directory, DataFile.FileName);
        var bitmapPage = FreeSpaceLayout.BitmapPageFor(page);
        var bytes = new byte[PageLayout.PageSizeBytes];
        using var file = File.OpenHandle(path, FileMode.Open, FileAccess.ReadWrite, FileShare.ReadWrite);
        RandomAccess.Read(file, bytes, bitmapPage * PageLayout.PageSizeBytes);
        var bit = FreeSpaceLayout.BitIndex(page);
        bytes[FreeSpaceLayout.BitmapOffsetBytes + bit / 8] ^= (byte)(1 << (bit % 8));
        fixed (byte* p = bytes)
        {
            ((PageHeader*)p)->Checksum = Crc32C.ComputePage(p, PageLayout.PageSizeBytes);
        }
        RandomAccess.Write(file, bytes, bitmapPage * PageLayout.PageSizeBytes);
    }

    /// <summary>Copies an environment's files (as a crash would leave them: data file and journal, no lock held).</summary>
    public static void CopyFiles(string source, string target)
    {
        Directory.CreateDirectory(target);
        File.Copy(System.IO.Path.Combine(source, DataFile.FileName), System.IO.Path.Combine(target, DataFile.FileName));
        var journals = System.IO.Path.Combine(target, "Journals");
        Directory.CreateDirectory(journals);
        foreach (var file in Directory.GetFiles(System.IO.Path.Combine(source, "Journals")))
        {
            File.Copy(file, System.IO.Path.Combine(journals, System.IO.Path.GetFileName(file)));
        }
    }
}
