using Storage.CrashHost;
using Storage.Tests.Support;

namespace Storage.Tests.CrashTests;

/// <summary>
/// Kills (SIGKILL) a child process at each step of a branch replacement (by one atomic exchange, and through an intent
/// file): the live branch's directory, opened alone and then in a group, holds the old version or the new one, whole, and
/// nothing of the replacement is left beside it once the new version is in place.
/// </summary>
[Trait("Category", "Crash")]
public sealed class A_branch_replacement_killed_at_each_step
{
    private static readonly TimeSpan LineTimeout = TimeSpan.FromSeconds(60);

    [Theory]
    [InlineData("intent", "replacement closed", "old")]
    [InlineData("intent", "live closed", "old")]
    [InlineData("intent", "intent written", "new")]
    [InlineData("intent", "live moved aside", "new")]
    [InlineData("intent", "replacement moved in", "new")]
    [InlineData("intent", "exchanged", "new")]
    [InlineData("intent", "opened", "new")]
    public Task Leaves_the_old_or_the_new_version_whole(string how, string step, string expected) => KillAndCheck(how, step, expected);

    [TheoryNeeding(Need.Linux, "An atomic exchange of two directories (renameat2)")]
    [InlineData("exchange", "live closed", "old")]
    [InlineData("exchange", "exchanged", "new")]
    public Task Leaves_the_old_or_the_new_version_whole_by_an_exchange(string how, string step, string expected) => KillAndCheck(how, step, expected);

    private static async Task KillAndCheck(string how, string step, string expected)
    {
        using var temp = new TempDirectory("replace-kill");
        using (var host = CrashHostProcess.Start("replace", temp.Path, step, how))
        {
            var line = await host.ReadLineAsync(LineTimeout);
            Assert.True(line == $"AT {step}", $"the host said '{line}'; stderr: {host.StandardError}");
            await host.KillAsync(LineTimeout);
        }

        using (var alone = StorageEnvironment.Open(temp.Combine("index")))
        {
            Assert.Equal(expected, KillWorkload.VersionOf(alone));
        }
        using (var group = EnvironmentGroup.Open(temp.Combine("root")))
        {
            Assert.Equal(expected, KillWorkload.VersionOf(group.OpenBranch(temp.Combine("index"))));
        }
        if (how == "intent" && expected == "new")
        {
            Assert.Equal(["index", "root"], Directory.GetFileSystemEntries(temp.Path).Select(Path.GetFileName).Order(StringComparer.Ordinal));
        }
    }
}
