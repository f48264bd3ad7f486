using Storage.Faults;

namespace Storage.Journal;

/// <summary>
/// Journal files kept after their entries reached the synced data file (<see cref="StorageOptions.RetainedJournalBytes"/>),
/// in a folder of their own beside <c>Journals</c>, so that an incremental backup finds every entry after its base. The
/// oldest go once the folder holds more than the bound; recovery never reads them.
/// </summary>
internal static class RetainedJournals
{
    /// <summary>The folder, in the environment's directory.</summary>
    public const string DirectoryName = "RetainedJournals";

    /// <summary>Moves a retired journal file into <paramref name="directory"/> and drops the oldest kept files past <paramref name="boundBytes"/>.</summary>
    public static void Keep(JournalFile file, string directory, long boundBytes, IFaultInjector? faults)
    {
        if (!Directory.Exists(directory)) Platform.FileIo.CreateDirectory(directory, faults);
        file.Rename(directory, JournalFile.FileName(file.Number), file.Number, faults);
        file.Dispose();
        Prune(directory, file.Path, boundBytes);
    }

    /// <summary>Moves the closed journal file <paramref name="path"/> (one recovery found obsolete) into the folder beside its journal folder, as <see cref="Keep(JournalFile, string, long, IFaultInjector?)"/> does.</summary>
    public static void Keep(string path, long number, long boundBytes, IFaultInjector? faults)
    {
        var directory = Path.Combine(Path.GetDirectoryName(Path.GetDirectoryName(Path.GetFullPath(path))!)!, DirectoryName);
        if (!Directory.Exists(directory)) Platform.FileIo.CreateDirectory(directory, faults);
        var kept = Path.Combine(directory, JournalFile.FileName(number));
        Platform.FileIo.Rename(path, kept, faults);
        Platform.FileIo.SyncDirectory(directory, faults);
        Platform.FileIo.SyncDirectory(Path.GetDirectoryName(Path.GetFullPath(path))!, faults);
        Prune(directory, kept, boundBytes);
    }

    /// <summary>Deletes the oldest kept files while the folder holds more than <paramref name="boundBytes"/>; never <paramref name="newest"/>.</summary>
    private static void Prune(string directory, string newest, long boundBytes)
    {
        var kept = JournalEntryReader.ListFiles(directory).OrderByDescending(f => f.Number).ToList();
        long total = 0;
        foreach (var (_, path) in kept)
        {
            total += new FileInfo(path).Length;
            // The newest files stay within the bound (always the one just kept): the older ones go, oldest last.
            if (total > boundBytes && path != newest) File.Delete(path);
        }
    }

    /// <summary>The kept files, oldest first.</summary>
    public static IReadOnlyList<(long Number, string Path)> List(string environmentDirectory) =>
        JournalEntryReader.ListFiles(Path.Combine(environmentDirectory, DirectoryName)).OrderBy(f => f.Number).ToList();
}
