using Storage.Tests.Support;

namespace Storage.Tests.EnvironmentTests;

/// <summary>
/// Everything an environment creates on Unix is its owner's alone, whatever the process's umask lets through: the
/// folders (0700) and every file in them (0600), on both backends (the native layer creates journal files itself).
/// </summary>
public sealed class File_permissions
{
    [FactNeeding(Need.Posix, "Checking owner-only modes")]
    [System.Runtime.Versioning.UnsupportedOSPlatform("windows")]
    public void An_environment_creates_only_owner_only_folders_and_files()
    {
        using var parent = new TempDirectory("permissions");
        var directory = parent.Combine("env");
        var group = UnixFileMode.GroupRead | UnixFileMode.GroupWrite | UnixFileMode.GroupExecute |
                    UnixFileMode.OtherRead | UnixFileMode.OtherWrite | UnixFileMode.OtherExecute;
        using (var env = StorageEnvironment.Open(directory, TestOptions.Small))
        {
            // Enough commits that journal files switch and spares are made.
            for (var t = 0; t < 200; t++)
            {
                using var tx = env.BeginWrite();
                var tree = tx.OpenOrCreateTree("t");
                for (var i = 0; i < 50; i++) tree.Put(BitConverter.GetBytes(t * 1000 + i), new byte[200]);
                tx.Commit();
            }
            env.Checkpoint();
            var entries = Directory.GetFileSystemEntries(directory, "*", SearchOption.AllDirectories).Append(directory).ToList();
            Assert.Contains(entries, e => e.EndsWith(".journal", StringComparison.Ordinal));
            Assert.Contains(entries, e => Path.GetFileName(e) == "lock");
            foreach (var entry in entries)
            {
                var mode = File.GetUnixFileMode(entry);
                Assert.True((mode & group) == 0, $"{Path.GetRelativePath(parent.Path, entry)} is {Convert.ToString((int)mode, 8)}");
            }
        }
    }
}
