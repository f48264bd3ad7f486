using Storage.Faults;
using Storage.Journal;
using Storage.Platform;

namespace Storage.Recovery;

/// <summary>
/// Where an open that accepts the loss of damaged journal entries (<see cref="JournalRecoveryMode.DiscardAfterDamage"/>)
/// puts the journal files it gives up: a new <c>lost-*</c> folder in the journal folder, named by the time, so that nothing
/// is deleted that a person may want to look at.
/// </summary>
internal static class LostJournals
{
    /// <summary>
    /// Gives the journal files from the damaged one on (those that hold given-up transactions) a second name in a new lost-*
    /// folder, durably; null, with nothing left behind, where hard links cannot be made (the caller then moves them).
    /// </summary>
    public static (string Directory, List<(long Number, string Path)> Files)? LinkAside(IReadOnlyList<(long Number, string Path)> files, long fromNumber,
        string journalDirectory, IFaultInjector? faults)
    {
        var linking = files.Where(f => f.Number >= fromNumber).ToList();
        if (linking.Count == 0) return null;
        var lost = CreateDirectory(journalDirectory, faults);
        if (!JournalLinks.TryLinkAll(linking.Select(f => f.Path), lost))
        {
            try
            {
                Directory.Delete(lost);
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                // An empty folder left: the next open that gives journals up makes another.
            }
            return null;
        }
        FileIo.SyncDirectory(lost, faults);
        FileIo.SyncDirectory(journalDirectory, faults);
        return (lost, linking);
    }

    /// <summary>Moves the journal files from the damaged one on (those that held given-up transactions) into a new lost-* folder.</summary>
    public static string? MoveAside(IReadOnlyList<(long Number, string Path)> files, long fromNumber, long newFileNumber, string journalDirectory, IFaultInjector? faults)
    {
        var moving = files.Where(f => f.Number >= fromNumber && f.Number < newFileNumber).ToList();
        if (moving.Count == 0) return null;
        var lost = CreateDirectory(journalDirectory, faults);
        try
        {
            foreach (var (_, path) in moving)
            {
                FileIo.Move(path, Path.Combine(lost, Path.GetFileName(path)));
                faults?.AfterRename(path, Path.Combine(lost, Path.GetFileName(path)));
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw FileIo.Translate(e, "move aside", lost);
        }
        FileIo.SyncDirectory(lost, faults);
        FileIo.SyncDirectory(journalDirectory, faults);
        return lost;
    }

    /// <summary>A new lost-* folder in the journal folder, named by the time (made durable with the files put in it).</summary>
    private static string CreateDirectory(string journalDirectory, IFaultInjector? faults)
    {
        var named = Path.Combine(journalDirectory, "lost-" + DateTime.UtcNow.ToString("yyyyMMdd'T'HHmmss'Z'", System.Globalization.CultureInfo.InvariantCulture));
        var lost = named;
        // An earlier open that stopped part-way may have made one this second.
        for (var n = 2; Path.Exists(lost); n++) lost = $"{named}-{n}";
        FileIo.CreateDirectory(lost, faults, syncParent: false);
        return lost;
    }
}
