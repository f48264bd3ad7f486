namespace Storage.Benchmarks.Measurement;

/// <summary>Sizes of what an engine left on disk.</summary>
internal static class FileSizes
{
    /// <summary>Length of the file, or null when it does not exist.</summary>
    public static long? Of(string path)
    {
        var file = new FileInfo(path);
        return file.Exists ? file.Length : null;
    }

    /// <summary>
    /// Sum of the lengths of the files directly in <paramref name="directory"/> matching <paramref name="pattern"/>,
    /// or null when there are none.
    /// </summary>
    public static long? OfMatching(string directory, string pattern)
    {
        if (!Directory.Exists(directory)) return null;
        var files = new DirectoryInfo(directory).GetFiles(pattern, SearchOption.TopDirectoryOnly);
        return files.Length == 0 ? null : files.Sum(file => file.Length);
    }

    /// <summary>Sum of the lengths of every file under <paramref name="directory"/>.</summary>
    public static long OfDirectory(string directory) =>
        Directory.Exists(directory)
            ? new DirectoryInfo(directory).EnumerateFiles("*", SearchOption.AllDirectories).Sum(file => file.Length)
            : 0;
}
