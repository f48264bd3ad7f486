using System.Runtime.InteropServices;

namespace Storage.Benchmarks.Measurement;

/// <summary>
/// Files made durable the same way for every engine (W11): each file fsynced, then each directory, so that a copy or a
/// backup is timed until it would survive power loss whatever the engine did itself.
/// </summary>
internal static partial class DurableFiles
{
    private const int ReadOnly = 0; // O_RDONLY: enough to fsync a directory

    private const int CopyBufferBytes = 1 << 20;

    [LibraryImport("libc", EntryPoint = "open", SetLastError = true, StringMarshalling = StringMarshalling.Utf8)]
    private static partial int Open(string path, int flags);

    [LibraryImport("libc", EntryPoint = "fsync", SetLastError = true)]
    private static partial int Fsync(int fd);

    [LibraryImport("libc", EntryPoint = "close", SetLastError = true)]
    private static partial int Close(int fd);

    /// <summary>Fsyncs every file under <paramref name="directory"/>, then every directory under it and itself, deepest first.</summary>
    public static void SyncTree(string directory)
    {
        foreach (var path in Directory.EnumerateFiles(directory, "*", SearchOption.AllDirectories))
        {
            using var handle = File.OpenHandle(path, FileMode.Open, FileAccess.ReadWrite, FileShare.ReadWrite | FileShare.Delete);
            RandomAccess.FlushToDisk(handle);
        }
        var directories = Directory.EnumerateDirectories(directory, "*", SearchOption.AllDirectories)
            .OrderByDescending(path => path.Length)
            .Append(directory);
        foreach (var path in directories) SyncDirectory(path);
    }

    /// <summary>Fsyncs a directory, so that the names in it are durable (Linux; elsewhere nothing).</summary>
    public static void SyncDirectory(string directory)
    {
        if (OperatingSystem.IsWindows()) return;
        var fd = Open(directory, ReadOnly);
        if (fd < 0) throw new IOException($"open('{directory}') failed (errno {Marshal.GetLastPInvokeError()}).");
        try
        {
            if (Fsync(fd) != 0) throw new IOException($"fsync('{directory}') failed (errno {Marshal.GetLastPInvokeError()}).");
        }
        finally
        {
            Close(fd);
        }
    }

    /// <summary>Copies one file into a new file through a 1 MiB buffer, then fsyncs the copy and its directory.</summary>
    public static void Copy(string source, string destination)
    {
        using (var input = new FileStream(source, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete, bufferSize: 0, FileOptions.SequentialScan))
        using (var output = new FileStream(destination, FileMode.CreateNew, FileAccess.Write, FileShare.None, bufferSize: 0))
        {
            var buffer = new byte[CopyBufferBytes];
            int read;
            while ((read = input.Read(buffer)) > 0) output.Write(buffer, 0, read);
            output.Flush(flushToDisk: true);
        }
        SyncDirectory(Path.GetDirectoryName(Path.GetFullPath(destination))!);
    }

    /// <summary>
    /// A plain copy of <paramref name="bytes"/> bytes: read from the files of <paramref name="sourceDirectory"/>
    /// (largest first, and from the first again when they hold fewer), written to the new file
    /// <paramref name="destination"/> through a 1 MiB buffer, then the file and its directory fsynced.
    /// </summary>
    public static void CopyBytes(string sourceDirectory, long bytes, string destination)
    {
        var sources = new DirectoryInfo(sourceDirectory).EnumerateFiles("*", SearchOption.AllDirectories)
            .Where(file => file.Length > 0)
            .OrderByDescending(file => file.Length)
            .Select(file => file.FullName)
            .ToList();
        if (sources.Count == 0) throw new InvalidOperationException($"Nothing to copy in '{sourceDirectory}'.");
        var buffer = new byte[CopyBufferBytes];
        using (var output = new FileStream(destination, FileMode.CreateNew, FileAccess.Write, FileShare.None, bufferSize: 0))
        {
            long left = bytes;
            for (var next = 0; left > 0; next = (next + 1) % sources.Count)
            {
                using var input = new FileStream(sources[next], FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete, bufferSize: 0, FileOptions.SequentialScan);
                int read;
                while (left > 0 && (read = input.Read(buffer, 0, (int)Math.Min(buffer.Length, left))) > 0)
                {
                    output.Write(buffer, 0, read);
                    left -= read;
                }
            }
            output.Flush(flushToDisk: true);
        }
        SyncDirectory(Path.GetDirectoryName(Path.GetFullPath(destination))!);
    }
}
