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

    /// <summary>Sum of the lengths of every file under <paramref name="directory"/>.</summary>
    public static long OfDirectory(string directory) =>
        Directory.Exists(directory)
            ? new DirectoryInfo(directory).EnumerateFiles("*", SearchOption.AllDirectories).Sum(file => file.Length)
            : 0;
}
