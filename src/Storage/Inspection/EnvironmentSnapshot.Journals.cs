using Storage.Groups;
using Storage.Journal;

namespace Storage.Inspection;

/// <summary>The journal files of the snapshot's directory, and the facts an environment group's members share.</summary>
public sealed partial class EnvironmentSnapshot
{
    /// <summary>The files in the journal folder, by number (the snapshot's walk may use fewer of them).</summary>
    /// <exception cref="StorageException">The folder cannot be listed.</exception>
    public IReadOnlyList<(long Number, string Path)> ListJournalFiles() => JournalEntryReader.ListFiles(JournalDirectory);

    /// <summary>
    /// Reads one journal file on its own: its header, the run of valid entries of <paramref name="environmentId"/> from
    /// the first block after the header (stepping over other members' entries in a shared file), and what ends the run.
    /// </summary>
    /// <param name="path">The file.</param>
    /// <param name="number">Its number, from its name.</param>
    /// <param name="environmentId">The environment whose entries are counted (<see cref="DataFileHeader.EnvironmentId"/>).</param>
    /// <exception cref="StorageException">The file cannot be opened or read.</exception>
    public static JournalFileSummary SummarizeJournalFile(string path, long number, ulong environmentId)
    {
        ArgumentException.ThrowIfNullOrEmpty(path);
        return JournalFileScanner.Summarize(path, number, environmentId);
    }

    /// <summary>
    /// Reads only the header block of a journal file: null, with the reason in <paramref name="problem"/>, when it is not a
    /// valid journal file header. Cheaper than <see cref="SummarizeJournalFile"/>, which reads every entry.
    /// </summary>
    /// <exception cref="StorageException">The file cannot be opened or read.</exception>
    public static JournalFileHeaderSummary? ReadJournalFileHeader(string path, out string? problem)
    {
        ArgumentException.ThrowIfNullOrEmpty(path);
        return JournalFiles.ReadHeader(path, out _, out problem) is { } header
            ? new JournalFileHeaderSummary(header.EnvironmentId, header.FileNumber, header.SizeBytesOfFile, header.FirstTransactionId, header.IsShared,
                header.IsRecycled, Platform.Posix.LinkCount(path) is { } links ? (int)links : -1)
            : null;
    }

    /// <summary>
    /// Whether two paths name the same file, as the hard links of a shared journal file of an environment group do.
    /// Without the native library, files with the same contents count as the same.
    /// </summary>
    /// <exception cref="StorageException">A file cannot be examined.</exception>
    public static bool AreSameFile(string pathA, string pathB)
    {
        ArgumentException.ThrowIfNullOrEmpty(pathA);
        ArgumentException.ThrowIfNullOrEmpty(pathB);
        return Platform.Pal.IsAvailable ? Platform.Pal.SameFile(pathA, pathB) : File.ReadAllBytes(pathA).AsSpan().SequenceEqual(File.ReadAllBytes(pathB));
    }

    /// <summary>
    /// The replacement of the branch environment in <paramref name="directory"/> that a crash interrupted, when its
    /// intent file is there (the next open of the branch completes it); else null. Changes nothing.
    /// </summary>
    public static InterruptedReplacement? FindInterruptedReplacement(string directory)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(directory);
        var intentPath = BranchReplacement.IntentPath(Path.GetFullPath(directory));
        if (!File.Exists(intentPath)) return null;
        var intent = BranchReplacement.TryReadIntent(intentPath, out var readError);
        return new InterruptedReplacement(intentPath, intent?.ReplacementPath, readError?.Message);
    }
}
