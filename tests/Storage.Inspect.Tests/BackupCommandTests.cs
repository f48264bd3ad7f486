using static Storage.Inspect.Tests.TestEnvironments;

namespace Storage.Inspect.Tests;

/// <summary><c>backup</c>, <c>restore</c> and <c>verify</c>.</summary>
public class BackupCommandTests
{
    [Fact]
    public void A_backup_verifies_and_restores_to_the_same_trees_and_values()
    {
        using var dir = new TempDir();
        var source = dir.Sub("source");
        CreateSample(source, users: 1500, blobs: 12);

        Assert.Equal(0, Run(out var backedUp, out var error, "backup", source, dir.Sub("backups")));
        Assert.Equal("", error);
        var file = Assert.Single(Directory.GetFiles(dir.Sub("backups")));
        Assert.EndsWith(StorageEnvironment.BackupFileExtension, file, StringComparison.Ordinal);
        Assert.Contains($"-> {file}", backedUp);

        Assert.Equal(0, Run(out var verified, out _, "verify", file));
        Assert.Contains("whole: every block's checksum and place, and the trailer, check out", verified);

        Assert.Equal(0, Run(out var restored, out _, "restore", file, dir.Sub("restored")));
        Assert.Contains("(checked: consistent)", restored);
        Assert.Equal(0, Run(out var sourceDump, out _, "dump", source));
        Assert.Equal(0, Run(out var restoredDump, out _, "dump", dir.Sub("restored")));
        Assert.Equal(sourceDump, restoredDump);
        Assert.Equal(0, Run(out _, out _, "check", dir.Sub("restored")));
    }

    [Fact]
    public void A_damaged_backup_fails_verify_and_restore_and_nothing_is_restored()
    {
        using var dir = new TempDir();
        var source = dir.Sub("source");
        CreateSample(source, users: 500, blobs: 4);
        Assert.Equal(0, Run(out _, out _, "backup", source, dir.Sub("backups")));
        var file = Assert.Single(Directory.GetFiles(dir.Sub("backups")));
        var bytes = File.ReadAllBytes(file);
        bytes[bytes.Length / 2] ^= 0x10;
        File.WriteAllBytes(file, bytes);

        Assert.Equal(1, Run(out _, out var verifyError, "verify", file));
        Assert.Contains("checksum does not match", verifyError);
        Assert.Equal(1, Run(out _, out var restoreError, "restore", file, dir.Sub("restored")));
        Assert.Contains("checksum does not match", restoreError);
        Assert.False(Directory.Exists(dir.Sub("restored")));
    }

    [Fact]
    public void A_backup_of_an_environment_open_elsewhere_is_refused()
    {
        using var dir = new TempDir();
        var source = dir.Sub("source");
        using var env = StorageEnvironment.Open(source, Quiet);
        Fill(env, 10, 1);
        Assert.Equal(1, Run(out _, out var error, "backup", source, dir.Sub("backups")));
        Assert.Contains("is open in another process: that process takes its backups", error);
        Assert.False(Directory.Exists(dir.Sub("backups")));
    }
}
