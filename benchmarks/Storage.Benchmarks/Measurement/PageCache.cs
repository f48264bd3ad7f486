using System.Runtime.InteropServices;

namespace Storage.Benchmarks.Measurement;

/// <summary>
/// Drops files from the kernel's page cache (fsync, then posix_fadvise DONTNEED) for cold-read workloads, and loads
/// them into it for warm ones.
/// </summary>
internal static partial class PageCache
{
    private const int DontNeed = 4; // POSIX_FADV_DONTNEED

    [LibraryImport("libc", EntryPoint = "posix_fadvise")]
    private static partial int Fadvise(nint fd, long offset, long length, int advice);

    /// <summary>
    /// Reads every file under <paramref name="directory"/> once, front to back, so that a warm-read workload finds the
    /// engine's files in the page cache whatever ran before it (the fills of other engines write tens of GiB through
    /// the cache and evict older files); returns how many bytes were read.
    /// </summary>
    public static long LoadDirectory(string directory)
    {
        var buffer = new byte[1 << 20];
        long bytes = 0;
        foreach (var path in Directory.EnumerateFiles(directory, "*", SearchOption.AllDirectories))
        {
            using var handle = File.OpenHandle(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
            for (long offset = 0; ; )
            {
                var read = RandomAccess.Read(handle, buffer, offset);
                if (read <= 0) break;
                offset += read;
                bytes += read;
            }
        }
        return bytes;
    }

    /// <summary>Every file under <paramref name="directory"/>; returns how many bytes were dropped. Linux only.</summary>
    public static long DropDirectory(string directory)
    {
        if (!OperatingSystem.IsLinux()) throw new PlatformNotSupportedException("Dropping files from the page cache needs posix_fadvise (Linux).");
        long bytes = 0;
        foreach (var path in Directory.EnumerateFiles(directory, "*", SearchOption.AllDirectories))
        {
            using var handle = File.OpenHandle(path, FileMode.Open, FileAccess.ReadWrite, FileShare.ReadWrite | FileShare.Delete);
            RandomAccess.FlushToDisk(handle);
            var error = Fadvise(handle.DangerousGetHandle(), 0, 0, DontNeed);
            if (error != 0) throw new IOException($"posix_fadvise(DONTNEED) failed on '{path}' (errno {error}).");
            bytes += RandomAccess.GetLength(handle);
        }
        return bytes;
    }
}
