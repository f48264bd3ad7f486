using Storage.Tests.Support;
using static Storage.Tests.Support.EnvHelpers;

namespace Storage.Tests.EnvironmentTests;

public sealed class Only_one_open_instance_per_directory
{
    private static readonly TimeSpan HostTimeout = TimeSpan.FromSeconds(60);

    [Fact]
    public void A_second_open_in_the_same_process_fails_with_EnvironmentLocked_and_damages_nothing()
    {
        using var temp = new TempDirectory();
        // No background flush: the data file changes only if the second open changes it.
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.JournalOnly))
        {
            PutAndCommit(env, "t", ("a", "1"));
            var dataBefore = DataFileInspector.Hash(DataFileInspector.PathOf(temp.Path));

            var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(temp.Path, TestOptions.Small));

            Assert.Equal(StorageErrorCode.EnvironmentLocked, error.ErrorCode);
            Assert.Contains(temp.Path, error.Message, StringComparison.Ordinal);
            Assert.Equal(dataBefore, DataFileInspector.Hash(DataFileInspector.PathOf(temp.Path)));
            // The first instance is unaffected.
            PutAndCommit(env, "t", ("b", "2"));
            Assert.Equal("1", GetString(env, "t", "a"));
        }

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            Assert.Equal("1", GetString(env, "t", "a"));
            Assert.Equal("2", GetString(env, "t", "b"));
        }
    }

    [Fact]
    public void Repeated_failed_opens_do_not_release_the_lock_of_the_open_instance()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);

        for (var i = 0; i < 3; i++)
        {
            var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(temp.Path, TestOptions.Small));
            Assert.Equal(StorageErrorCode.EnvironmentLocked, error.ErrorCode);
        }
        PutAndCommit(env, "t", ("still", "writable"));
    }

    [Fact]
    public async Task An_open_while_another_process_holds_the_environment_fails_with_EnvironmentLocked_and_damages_nothing()
    {
        using var temp = new TempDirectory();
        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            PutAndCommit(env, "t", ("before", "child"));
        }

        using (var host = CrashHostProcess.Start("hold", temp.Path))
        {
            Assert.Equal("OPEN", await host.ReadLineAsync(HostTimeout));
            var dataBefore = DataFileInspector.Hash(DataFileInspector.PathOf(temp.Path));

            var error = Assert.Throws<StorageException>(() => StorageEnvironment.Open(temp.Path, TestOptions.Small));

            Assert.Equal(StorageErrorCode.EnvironmentLocked, error.ErrorCode);
            Assert.Equal(dataBefore, DataFileInspector.Hash(DataFileInspector.PathOf(temp.Path)));
            await host.WriteLineAsync("close");
            Assert.Equal("CLOSED", await host.ReadLineAsync(HostTimeout));
            await host.WaitForExitAsync(HostTimeout);
            Assert.Equal(0, host.ExitCode);
        }

        using (var env = StorageEnvironment.Open(temp.Path, TestOptions.Small))
        {
            Assert.Equal("child", GetString(env, "t", "before"));
        }
    }

    [Fact]
    public async Task Another_process_cannot_open_an_environment_this_process_holds()
    {
        using var temp = new TempDirectory();
        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("a", "1"));

        using var host = CrashHostProcess.Start("try-open", temp.Path);
        var answer = await host.ReadLineAsync(HostTimeout);
        await host.WaitForExitAsync(HostTimeout);

        Assert.True(answer == "LOCKED", $"The child answered '{answer}'; stderr: {host.StandardError}");
        PutAndCommit(env, "t", ("b", "2"));
        Assert.Equal("1", GetString(env, "t", "a"));
    }

    [Fact]
    public async Task A_killed_holder_releases_the_lock()
    {
        using var temp = new TempDirectory();
        using (var host = CrashHostProcess.Start("hold", temp.Path))
        {
            Assert.Equal("OPEN", await host.ReadLineAsync(HostTimeout));
            await host.KillAsync(HostTimeout);
        }

        using var env = StorageEnvironment.Open(temp.Path, TestOptions.Small);
        PutAndCommit(env, "t", ("after", "kill"));
        Assert.Equal("kill", GetString(env, "t", "after"));
    }
}
