using System.IO.Compression;
using System.Runtime.InteropServices;
using Storage;

// Opens an environment from the installed package, commits, reads back, reopens, and checks the backend.
// Usage: Storage.PackageConsumer <package.nupkg>. Exit code 0 when every check holds.
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
            for (var i = 0; i < 1000; i++) tree.Put(System.Text.Encoding.UTF8.GetBytes($"key-{i:D4}"), System.Text.Encoding.UTF8.GetBytes($"value-{i}"));
            tx.Commit();
        }
        env.Checkpoint();
        backend = env.GetStats().IoBackend;
    }
    using (var env = StorageEnvironment.Open(directory))
    using (var read = env.BeginRead())
    {
        var tree = read.OpenTree("greetings");
        Check(tree.Count == 1000, $"1000 entries after reopening (found {tree.Count})");
        Check(tree.Get("key-0042"u8) is { } value && value.AsSpan().SequenceEqual("value-42"u8), "key-0042 reads back");
    }
}
finally
{
    Directory.Delete(directory, recursive: true);
}

// The package's native library is found through runtimes/linux-x64/native on Linux x64.
var forcedManaged = string.Equals(Environment.GetEnvironmentVariable("STORAGE_IO_BACKEND"), "managed", StringComparison.OrdinalIgnoreCase);
if (OperatingSystem.IsLinux() && RuntimeInformation.ProcessArchitecture == Architecture.X64 && !forcedManaged)
{
    Check(backend == "io_uring", $"the io_uring backend loads from the package (got '{backend}')");
}

foreach (var failure in failures) Console.Error.WriteLine($"FAILED: {failure}");
Console.WriteLine(failures.Count == 0 ? $"package consumer: ok (backend {backend})" : $"package consumer: {failures.Count} checks failed");
return failures.Count == 0 ? 0 : 1;
