namespace Storage.Tests.Support;

/// <summary>
/// A fresh directory under the test assembly's folder (on the working tree's disk, not tmpfs, so that
/// O_DIRECT and fsync behave as they do for users), deleted on dispose.
/// </summary>
internal sealed class TempDirectory : IDisposable
{
    public TempDirectory(string? label = null, string? under = null)
    {
        Path = System.IO.Path.Combine(under ?? Root, $"{label ?? "env"}-{Guid.NewGuid():N}");
        Directory.CreateDirectory(Path);
    }

    public static string Root => System.IO.Path.Combine(AppContext.BaseDirectory, "envs");

    public string Path { get; }

    /// <summary>A path inside this directory (not created).</summary>
    public string Combine(params string[] parts) => System.IO.Path.Combine([Path, .. parts]);

    public void Dispose() => DeleteDirectory(Path);

    public static void DeleteDirectory(string path)
    {
        for (var attempt = 0; ; attempt++)
        {
            try
            {
                if (Directory.Exists(path)) Directory.Delete(path, recursive: true);
                return;
            }
            catch (IOException) when (attempt < 5)
            {
                // A child process that was just killed may still be releasing files.
                Thread.Yield();
            }
            catch (UnauthorizedAccessException) when (attempt < 5)
            {
                Thread.Yield();
            }
            catch (Exception) when (attempt >= 5)
            {
                return; // Leave it; it is under bin/ and does not affect other tests.
            }
        }
    }

    /// <summary>Copies a closed environment (all files, recursively) to a new directory.</summary>
    public static void CopyDirectory(string source, string destination)
    {
        Directory.CreateDirectory(destination);
        foreach (var file in Directory.GetFiles(source))
        {
            File.Copy(file, System.IO.Path.Combine(destination, System.IO.Path.GetFileName(file)));
        }
        foreach (var directory in Directory.GetDirectories(source))
        {
            CopyDirectory(directory, System.IO.Path.Combine(destination, System.IO.Path.GetFileName(directory)));
        }
    }
}
