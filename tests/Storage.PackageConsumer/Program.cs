using System.IO.Compression;
using System.Runtime.InteropServices;
using Storage;

// Opens an environment from the installed package, commits, reads back, reopens, and checks the backend; then kills a
// child process that commits, three times, and checks what recovery finds (KillCheck); then an environment group (GroupCheck).
// Usage: Storage.PackageConsumer <package.nupkg>. Exit code 0 when every check holds.
if (args.Length == 3 && args[0] == "--kill-child")
{
    return KillCheck.Child(args[1], long.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture));
}
if (args.Length != 1)
{
    Console.Error.WriteLine("usage: Storage.PackageConsumer <path to the .nupkg>");
    return 2;
}

var failures = new List<string>();
void Check(bool condition, string what)
{
    if (!condition) failures.Add(what);
}

using (var package = ZipFile.OpenRead(args[0]))
{
    var entries = package.Entries.Select(e => e.FullName).ToHashSet();
    Check(entries.Contains("lib/net10.0/Storage.dll"), "the package holds lib/net10.0/Storage.dll");
    Check(entries.Contains("runtimes/linux-x64/native/libstoragepal.so"), "the package holds runtimes/linux-x64/native/libstoragepal.so");
    Check(entries.Contains("runtimes/win-x64/native/storagepal.dll"), "the package holds runtimes/win-x64/native/storagepal.dll");
}

var directory = Path.Combine(Path.GetTempPath(), "storage-package-consumer-" + Guid.NewGuid().ToString("N"));
string backend;
try
{
    using (var env = StorageEnvironment.Open(directory))
    {
        using (var tx = env.BeginWrite())
        {
            var tree = tx.CreateTree("greetings");
            for (var i = 0; i < 1000; i++) tree.Put(System.Text.Encoding.UTF8.GetBytes($"key-{i:D4}"), System.Text.Encoding.UTF8.GetBytes($"value-{i}".PadRight(100, '.')));
            tx.Commit();
        }
        env.Checkpoint();
        var stats = env.GetStats();
        backend = stats.IoBackend;
        // The tree's pages were allocated side by side: the flush writes them as runs, not page by page.
        Check(stats.Flush.Pages > 1 && stats.Flush.Runs < stats.Flush.Pages,
            $"the flush merged adjacent pages into runs ({stats.Flush.Pages} pages, {stats.Flush.Runs} writes)");
    }
    using (var env = StorageEnvironment.Open(directory))
    using (var read = env.BeginRead())
    {
        var tree = read.OpenTree("greetings");
        Check(tree.Count == 1000, $"1000 entries after reopening (found {tree.Count})");
        Check(tree.Get("key-0042"u8) is { } value && value.AsSpan().SequenceEqual(System.Text.Encoding.UTF8.GetBytes("value-42".PadRight(100, '.'))),
            "key-0042 reads back");
    }
    // A full hot backup while a writer commits, its restore into a new directory, and the restored copy read back.
    BackupResult backup;
    using (var env = StorageEnvironment.Open(directory))
    {
        var writer = Task.Run(() =>
        {
            for (var i = 0; i < 200; i++)
            {
                using var tx = env.BeginWrite();
                tx.OpenTree("greetings").Put(System.Text.Encoding.UTF8.GetBytes($"later-{i:D4}"), "x"u8);
                tx.Commit();
            }
        });
        backup = env.BackupAsync(directory + "-backups").GetAwaiter().GetResult();
        writer.GetAwaiter().GetResult();
    }
    var restored = StorageEnvironment.RestoreAsync(backup.Path!, directory + "-restored").GetAwaiter().GetResult();
    Check(restored.TransactionId == backup.TransactionId, $"the restore holds the backup's transaction ({restored.TransactionId}, {backup.TransactionId})");
    using (var env = StorageEnvironment.Open(directory + "-restored"))
    using (var read = env.BeginRead())
    {
        var tree = read.OpenTree("greetings");
        Check(tree.Count == 1000 + backup.TransactionId - 1, $"the restored copy holds the fill and the {backup.TransactionId - 1} commits before the backup (found {tree.Count})");
        Check(env.Check().IsConsistent, "the restored copy is consistent");
    }
}
finally
{
    foreach (var made in new[] { directory, directory + "-backups", directory + "-restored" })
    {
        if (Directory.Exists(made)) Directory.Delete(made, recursive: true);
    }
}

// The package's native library is found through runtimes/<rid>/native: linux-x64 and win-x64.
var forcedManaged = string.Equals(Environment.GetEnvironmentVariable("STORAGE_IO_BACKEND"), "managed", StringComparison.OrdinalIgnoreCase);
if (RuntimeInformation.ProcessArchitecture == Architecture.X64 && !forcedManaged)
{
    if (OperatingSystem.IsLinux()) Check(backend == "io_uring", $"the io_uring backend loads from the package (got '{backend}')");
    if (OperatingSystem.IsWindows()) Check(backend == "win32-overlapped", $"the Windows native backend loads from the package (got '{backend}')");
}

KillCheck.Run(Check);
GroupCheck.Run(Check);

foreach (var failure in failures) Console.Error.WriteLine($"FAILED: {failure}");
Console.WriteLine(failures.Count == 0 ? $"package consumer: ok (backend {backend})" : $"package consumer: {failures.Count} checks failed");
return failures.Count == 0 ? 0 : 1;
