namespace Storage.Benchmarks.Measurement;

/// <summary>Which file system a path lives on, from <c>/proc/self/mountinfo</c>.</summary>
internal static class MountInfo
{
    public readonly record struct Mount(string MountPoint, string FileSystemType, string Source)
    {
        /// <summary>A file system in memory, where durable writes prove nothing.</summary>
        public bool IsInMemory => FileSystemType is "tmpfs" or "ramfs";
    }

    /// <summary>The mount holding <paramref name="path"/> (the longest mount point that prefixes it), or null when unknown.</summary>
    public static Mount? Find(string path)
    {
        path = Path.GetFullPath(path);
        Mount? best = null;
        try
        {
            foreach (var line in File.ReadLines("/proc/self/mountinfo"))
            {
                // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
                var fields = line.Split(' ');
                var separator = Array.IndexOf(fields, "-");
                if (fields.Length < 5 || separator < 0 || separator + 2 >= fields.Length) continue;
                var mountPoint = Unescape(fields[4]);
                if (!IsUnder(path, mountPoint)) continue;
                if (best is null || mountPoint.Length >= best.Value.MountPoint.Length)
                {
                    best = new Mount(mountPoint, fields[separator + 1], fields[separator + 2]);
                }
            }
        }
        catch (IOException)
        {
            return null;
        }
        return best;
    }

    private static bool IsUnder(string path, string mountPoint) =>
        mountPoint == "/"
        || path == mountPoint
        || (path.StartsWith(mountPoint, StringComparison.Ordinal) && path[mountPoint.Length] == '/');

    // mountinfo escapes space, tab, newline and backslash as octal.
    private static string Unescape(string field) =>
        field.Replace("\\040", " ", StringComparison.Ordinal)
            .Replace("\\011", "\t", StringComparison.Ordinal)
            .Replace("\\012", "\n", StringComparison.Ordinal)
            .Replace("\\134", "\\", StringComparison.Ordinal);
}
