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

        Assert.Equal(0, Run(out var restored, out _, "restore", dir.Sub("restored"), file));
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
        Assert.Equal(1, Run(out _, out var restoreError, "restore", dir.Sub("restored"), file));
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

    [Fact]
    public void An_archive_is_described_and_restored_to_a_transaction()
    {
        using var dir = new TempDir();
        var archive = dir.Sub("archive");
        using (var env = StorageEnvironment.Open(dir.Sub("source"), Quiet with { ArchiveDirectory = archive, ArchiveInterval = TimeSpan.FromDays(1), RetainedJournalBytes = 1 << 30 }))
        {
            for (var i = 1; i <= 60; i++)
            {
                using (var tx = env.BeginWrite())
                {
                    tx.OpenOrCreateTree("t").Put("last"u8, System.Text.Encoding.ASCII.GetBytes($"{i}"));
                    tx.Commit();
                }
                if (i % 20 == 0) env.ShipArchiveNow();
            }
        }
        Assert.Equal(0, Run(out var described, out _, "archive", archive));
        Assert.Contains("restores up to transaction 60", described);
        Assert.Contains("incremental", described);

        Assert.Equal(0, Run(out var restored, out _, "restore", dir.Sub("at-30"), archive, "--archive", "--to-tx", "30"));
        Assert.Contains("restored transaction 30", restored);
        Assert.Equal(0, Run(out var value, out _, "get", dir.Sub("at-30"), "t", "last"));
        Assert.Equal("30\n", value.ReplaceLineEndings("\n"));

        Assert.Equal(0, Run(out var atTime, out _, "restore", dir.Sub("now"), archive, "--archive", "--to-time", DateTime.UtcNow.ToString("O")));
        Assert.Contains("restored transaction 60", atTime);
        Assert.Equal(2, Run(out _, out _, "restore", dir.Sub("bad"), archive, "--to-time", DateTime.UtcNow.ToString("O")));

        // A chain with a link left out is a gap the description names.
        var middle = Directory.GetFiles(archive, "incr-*").Order(StringComparer.Ordinal).First();
        File.Delete(middle);
        Assert.Equal(1, Run(out var broken, out _, "archive", archive));
        Assert.Contains("a gap", broken);
    }
}
