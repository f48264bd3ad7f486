using System.Globalization;

namespace Storage.Benchmarks.Measurement;

/// <summary>
/// Runs a part of the workload with this process in a memory cgroup of its own (Linux, cgroup v1 memory controller,
/// root), so that the page cache it fills is capped and a file larger than the cap is read as a file larger than
/// memory: what the kernel reads ahead evicts what the process read before. Only memory charged while inside counts
/// against the cap (the process's heap from before stays charged where it was). Dispose to move the process back and
/// remove the cgroup.
/// </summary>
internal sealed class MemoryLimit : IDisposable
{
    private const string ControllerRoot = "/sys/fs/cgroup/memory";

    private readonly string _directory;
    private readonly string _original;
    private bool _disposed;

    private MemoryLimit(string directory, string original, long limitBytes)
    {
        _directory = directory;
        _original = original;
        LimitBytes = limitBytes;
    }

    public long LimitBytes { get; }

    /// <summary>The most memory (page cache included) charged to the cgroup at once, so far.</summary>
    public long PeakBytes => ReadLong("memory.max_usage_in_bytes");

    /// <summary>Why a limit cannot be set on this machine, or null when it can.</summary>
    public static string? UnavailableReason()
    {
        if (!OperatingSystem.IsLinux()) return "needs Linux";
        if (!File.Exists(Path.Combine(ControllerRoot, "cgroup.procs"))) return $"needs the cgroup v1 memory controller at {ControllerRoot}";
        if (Environment.UserName != "root") return "needs root to create a memory cgroup";
        return null;
    }

    /// <summary>Moves this process into a new memory cgroup capped at <paramref name="limitBytes"/>.</summary>
    public static MemoryLimit Enter(long limitBytes)
    {
        if (UnavailableReason() is { } reason) throw new InvalidOperationException($"A memory limit {reason}.");
        var original = OriginalGroup();
        var directory = Path.Combine(ControllerRoot, $"storage-benchmarks-{Environment.ProcessId}");
        if (!Directory.Exists(directory)) Directory.CreateDirectory(directory);
        var limit = new MemoryLimit(directory, original, limitBytes);
        try
        {
            limit.Write("memory.limit_in_bytes", limitBytes.ToString(CultureInfo.InvariantCulture));
            limit.Write("cgroup.procs", Environment.ProcessId.ToString(CultureInfo.InvariantCulture));
            return limit;
        }
        catch
        {
            limit.Dispose();
            throw;
        }
    }

    public void Dispose()
    {
        if (_disposed) return;
        _disposed = true;
        try
        {
            File.WriteAllText(Path.Combine(_original, "cgroup.procs"), Environment.ProcessId.ToString(CultureInfo.InvariantCulture));
        }
        finally
        {
            // rmdir of an empty cgroup; the page cache still charged to it moves to the parent.
            Directory.Delete(_directory);
        }
    }

    /// <summary>The memory cgroup the process is in now (its line of /proc/self/cgroup names it under the controller's root).</summary>
    private static string OriginalGroup()
    {
        foreach (var line in File.ReadLines("/proc/self/cgroup"))
        {
            var parts = line.Split(':', 3);
            if (parts.Length == 3 && parts[1].Split(',').Contains("memory"))
            {
                return Path.Combine(ControllerRoot, parts[2].TrimStart('/'));
            }
        }
        return ControllerRoot;
    }

    private void Write(string file, string value) => File.WriteAllText(Path.Combine(_directory, file), value);

    private long ReadLong(string file) => long.Parse(File.ReadAllText(Path.Combine(_directory, file)).Trim(), CultureInfo.InvariantCulture);
}
