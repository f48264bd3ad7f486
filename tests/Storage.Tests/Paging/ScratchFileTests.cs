using System.Runtime.InteropServices;
using Storage.Paging;
using Storage.Scratch;
using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.PagingTests;

public sealed class Scratch_past_its_budget_while_a_reader_holds_it
{
    /// <summary>
    /// A 1 MiB budget and no flush on a timer. Commits past the budget still wake the flusher; the test runs the reader check
    /// that spills itself (<c>CheckNow</c>) rather than wait for it.
    /// </summary>
    private static readonly StorageOptions Options = TestOptions.JournalOnly with { ScratchBudgetBytes = 1 << 20 };

    [Fact]
    public void Spills_new_page_versions_to_an_owner_only_file_that_goes_once_the_reader_ends()
    {
        using var dir = new TempDirectory();
        var model = OrdinalBytes.NewModel();
        using (var env = StorageEnvironment.Open(dir.Path, Options))
        {
            PutAndCommit(env, "t", ("first", "1"));
            model[TestData.Key("first")] = TestData.Value("1");
            var reader = env.BeginRead();
            var snapshot = OrdinalBytes.Copy(model);
            Fill(env, model, from: 0, commits: 80);
            env.ReaderMonitor.CheckNow();
            Fill(env, model, from: 80, commits: 40);

            var stats = env.GetStats();
            Assert.True(stats.Memory.ScratchSpilledBytes > 0, "nothing was spilled");
            var file = Assert.Single(Directory.GetFiles(dir.Path, "scratch-*.spill"));
            if (!OperatingSystem.IsWindows()) Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(file));
            Assert.True(ScratchFileHeader.IsOwnedBy(File.ReadAllBytes(file).AsSpan(0, ScratchFileHeader.SizeBytes), env.EnvironmentId));
            TreeAssert.Equal(snapshot, reader.OpenTree("t"), "the held reader");
            using (var latest = env.BeginRead()) TreeAssert.Equal(model, latest.OpenTree("t"), "a new reader, reading spilled pages");

            reader.Dispose();
            env.Checkpoint();
            env.ReaderMonitor.CheckNow();
            Assert.Equal(0, env.GetStats().Memory.ScratchSpilledBytes);
            Assert.Empty(Directory.GetFiles(dir.Path, "scratch-*.spill"));
            Fill(env, model, from: 120, commits: 5);
        }
        using (var reopened = StorageEnvironment.Open(dir.Path, Options))
        using (var check = reopened.BeginRead())
        {
            TreeAssert.Equal(model, check.OpenTree("t"), "after a reopen");
        }
    }

    [Fact]
    public void Deletes_the_file_when_the_environment_closes()
    {
        using var dir = new TempDirectory();
        var model = OrdinalBytes.NewModel();
        var env = StorageEnvironment.Open(dir.Path, Options);
        PutAndCommit(env, "t", ("first", "1"));
        using (env.BeginRead())
        {
            Fill(env, model, from: 0, commits: 80);
            env.ReaderMonitor.CheckNow();
            Fill(env, model, from: 80, commits: 10);
            Assert.True(env.GetStats().Memory.ScratchSpilledBytes > 0);
        }
        env.Dispose();
        Assert.Empty(Directory.GetFiles(dir.Path, "scratch-*.spill"));
    }

    private static void Fill(StorageEnvironment env, SortedDictionary<byte[], byte[]> model, int from, int commits)
    {
        for (var c = from; c < from + commits; c++)
        {
            using var tx = env.BeginWrite();
            var tree = tx.OpenTree("t");
            for (var i = 0; i < 10; i++)
            {
                var key = TestData.Key($"key-{(c * 7919 + i * 104_729) % 100_000:D6}");
                var value = TestData.Value(c * 10 + i, 1500);
                tree.Put(key, value);
                model[key] = value;
            }
            tx.Commit();
        }
    }
}

public sealed class A_scratch_file_left_by_a_crash
{
    [Fact]
    public void Is_deleted_at_open_only_when_its_header_proves_it_is_this_environments()
    {
        using var dir = new TempDirectory();
        ulong environmentId;
        using (var env = StorageEnvironment.Open(dir.Path, TestOptions.Small))
        {
            environmentId = env.EnvironmentId;
            PutAndCommit(env, "t", ("a", "1"));
        }
        var own = Write(dir.Combine("scratch-00000000000000aa.spill"), Header(environmentId));
        var other = Write(dir.Combine("scratch-00000000000000bb.spill"), Header(environmentId + 1));
        var damaged = Write(dir.Combine("scratch-00000000000000cc.spill"), Damage(Header(environmentId)));
        var empty = Write(dir.Combine("scratch-00000000000000dd.spill"), []);
        var unrelated = Write(dir.Combine("scratch.txt"), Header(environmentId));

        using (var env = StorageEnvironment.Open(dir.Path, TestOptions.Small))
        {
            Assert.Equal("1", GetString(env, "t", "a"));
        }

        Assert.False(File.Exists(own));
        Assert.True(File.Exists(other));
        Assert.True(File.Exists(damaged));
        Assert.True(File.Exists(empty));
        Assert.True(File.Exists(unrelated));
    }

    private static byte[] Header(ulong environmentId)
    {
        var bytes = new byte[2 * PageLayout.PageSizeBytes];
        var header = ScratchFileHeader.Create(environmentId);
        MemoryMarshal.Write(bytes, in header);
        return bytes;
    }

    private static byte[] Damage(byte[] bytes)
    {
        bytes[20] ^= 0x40;
        return bytes;
    }

    private static string Write(string path, byte[] bytes)
    {
        File.WriteAllBytes(path, bytes);
        return path;
    }
}

public sealed class The_scratch_file_header
{
    [Fact]
    public void Is_64_bytes() => Assert.Equal(ScratchFileHeader.SizeBytes, Marshal.SizeOf<ScratchFileHeader>());
}
