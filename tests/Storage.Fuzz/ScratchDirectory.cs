namespace Storage.Fuzz;

/// <summary>
/// A fresh directory for one input's files, deleted on dispose. In memory (<c>/dev/shm</c>) where there is one:
/// a target writes and syncs its files on every execution, and a disk would make that the whole cost.
/// <c>STORAGE_FUZZ_TMP</c> chooses another parent.
/// </summary>
internal sealed class ScratchDirectory : IDisposable
{
    private static readonly string s_parent = ChooseParent();

    public ScratchDirectory(string purpose)
    {
        Path = System.IO.Path.Combine(s_parent, $"{purpose}-{Environment.ProcessId}-{Guid.NewGuid():N}");
        Directory.CreateDirectory(Path);
    }

    public string Path { get; }

    public string Combine(params string[] parts) => System.IO.Path.Combine([Path, .. parts]);

    private static string ChooseParent()
    {
        var configured = Environment.GetEnvironmentVariable("STORAGE_FUZZ_TMP");
        var parent = !string.IsNullOrEmpty(configured) ? configured
            : Directory.Exists("/dev/shm") ? "/dev/shm/storage-fuzz"
            : System.IO.Path.Combine(System.IO.Path.GetTempPath(), "storage-fuzz");
        Directory.CreateDirectory(parent);
        return parent;
    }

    public void Dispose()
    {
        try
        {
            Directory.Delete(Path, recursive: true);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            // A leftover directory costs a little memory; failing the input for it would hide the real outcome.
        }
    }
}
