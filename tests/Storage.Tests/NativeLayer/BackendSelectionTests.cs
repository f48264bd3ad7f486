using System.Runtime.InteropServices;
using Storage.Platform;
using Storage.Tests.Support;
using Xunit;

namespace Storage.Tests.NativeLayer;

/// <summary>Which backend an environment writes through, and the fallback when the native library is missing.</summary>
public sealed class BackendSelectionTests
{
    private static bool ManagedForced =>
        string.Equals(Environment.GetEnvironmentVariable(PlatformIo.EnvironmentVariable), "managed", StringComparison.OrdinalIgnoreCase);

    private static bool LinuxX64 => OperatingSystem.IsLinux() && RuntimeInformation.ProcessArchitecture == Architecture.X64;

    [Fact]
    public void AutoUsesTheNativeLayerWhereItIsBuilt()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        var expected = ManagedForced || !LinuxX64 ? PlatformIo.ManagedName : "io_uring";
        Assert.True(expected == env.GetStats().IoBackend, $"backend {env.GetStats().IoBackend}, expected {expected}; native layer: {Pal.UnavailableReason ?? "loaded"}");
    }

    [Fact]
    public void ManagedOptionUsesTheManagedBackend()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small with { IoBackend = IoBackend.Managed });
        Assert.Equal("managed", env.GetStats().IoBackend);
    }

    [FactNeeding(Need.LinuxX64, "The io_uring backend")]
    public void FlushesGoThroughTheRingAndEitherBackendReadsTheOthersFiles()
    {
        using var temp = new TempDirectory();
        var native = TestOptions.Small with { IoBackend = IoBackend.Native };
        using (var env = StorageEnvironment.Open(temp.Path, native))
        {
            Assert.Equal("io_uring", env.GetStats().IoBackend);
            var writer = Pal.SharedWriter(lowPriority: true, out _)!;
            var before = Pal.WriterStats(writer);
            using (var tx = env.BeginWrite())
            {
                var tree = tx.CreateTree("t");
                for (var i = 0; i < 3000; i++) tree.Put(TestData.Key($"k{i:D6}"), TestData.Value(i, 100));
                tx.Commit();
            }
            env.Checkpoint();
            var after = Pal.WriterStats(writer);
            Assert.True(after.Writes > before.Writes, "the flush issued writes on the ring");
            Assert.True(after.Syncs > before.Syncs, "the data file was synced on the ring");
            Assert.True(env.GetStats().Flush.Pages > 0);
        }
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small with { IoBackend = IoBackend.Managed }))
        {
            using (var read = env.BeginRead())
            {
                var tree = read.OpenTree("t");
                for (var i = 0; i < 3000; i++) Assert.True(tree.Get(TestData.Key($"k{i:D6}")).AsSpan().SequenceEqual(TestData.Value(i, 100)));
            }
            using (var tx = env.BeginWrite())
            {
                tx.OpenTree("t").Put(TestData.Key("k005000"), TestData.Value(5000, 10));
                tx.Commit();
            }
        }
        using (var env = StorageEnvironment.Open(temp.Path, native))
        using (var read = env.BeginRead())
        {
            Assert.Equal(3001, read.OpenTree("t").Count);
        }
    }

    [Fact]
    public async Task WithoutTheLibraryAutoFallsBackAndNativeFailsWithATypedError()
    {
        using var temp = new TempDirectory();
        // A copy of the host application with every file but the native library.
        var hostDirectory = Path.GetDirectoryName(CrashHostProcess.HostDll)!;
        var copy = temp.Combine("host");
        Directory.CreateDirectory(copy);
        foreach (var file in Directory.EnumerateFiles(hostDirectory))
        {
            var name = Path.GetFileName(file);
            if (name.Contains("storagepal", StringComparison.Ordinal)) continue;
            File.Copy(file, Path.Combine(copy, name));
        }
        var hostDll = Path.Combine(copy, Path.GetFileName(CrashHostProcess.HostDll));
        var environment = new Dictionary<string, string?> { [PlatformIo.EnvironmentVariable] = null };

        Assert.Equal("BACKEND managed", await RunAsync(hostDll, environment, "backend", temp.Combine("auto"), "Auto"));
        var native = await RunAsync(hostDll, environment, "backend", temp.Combine("native"), "Native");
        Assert.StartsWith("ERROR PlatformUnavailable", native, StringComparison.Ordinal);
        Assert.Contains("storagepal", native, StringComparison.Ordinal);

        if (LinuxX64)
        {
            // The same host with the library next to it uses the ring.
            Assert.Equal("BACKEND io_uring", await RunAsync(CrashHostProcess.HostDll, environment, "backend", temp.Combine("with-library"), "Auto"));
        }
    }

    [Fact]
    public async Task AnUnknownBackendIsRejected()
    {
        Assert.Equal(IoBackend.Auto, default(IoBackend));
        using var temp = new TempDirectory();
        var bogus = new Dictionary<string, string?> { [PlatformIo.EnvironmentVariable] = "bogus" };
        var line = await RunAsync(CrashHostProcess.HostDll, bogus, "backend", temp.Path, "Auto");
        Assert.StartsWith("ERROR PlatformUnavailable", line, StringComparison.Ordinal);
        Assert.Contains("bogus", line, StringComparison.Ordinal);
        var error = Assert.Throws<ArgumentOutOfRangeException>(() => new StorageOptions { IoBackend = (IoBackend)7 }.Validate());
        Assert.Equal(nameof(StorageOptions.IoBackend), error.ParamName);
    }

    private static async Task<string> RunAsync(string hostDll, IReadOnlyDictionary<string, string?> environment, params string[] arguments)
    {
        using var host = CrashHostProcess.StartFrom(hostDll, environment, arguments);
        var line = await host.ReadLineAsync(TimeSpan.FromSeconds(60));
        await host.WaitForExitAsync(TimeSpan.FromSeconds(60));
        return line ?? $"(no output; stderr: {host.StandardError})";
    }
}
