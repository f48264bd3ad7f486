using Storage.Inspection;

namespace Storage;

public sealed partial class StorageEnvironment
{
    /// <summary>
    /// The full consistency check of the newest committed snapshot (see <see cref="CheckReport"/>): every page below the
    /// next page number accounted for exactly once, every tree walked with its keys in order and its counters against its
    /// header, every checksum verified, the free-space bitmaps and the data file's holes compared with the pages in use.
    /// </summary>
    /// <remarks>
    /// <para>It reads through a read transaction, as any reader does: a page is the snapshot's version in memory when it
    /// was not flushed yet, else the data file's. Writers and the flusher go on meanwhile, and what they do never shows as
    /// damage; but while the check runs the snapshot stays pinned (the flusher writes nothing newer, and the versions it
    /// sees stay in scratch memory), and the reader limit policy applies to it like to any reader: when it ends the check,
    /// this throws <see cref="StorageException"/> with <see cref="StorageErrorCode.SnapshotTooOld"/>.</para>
    /// <para>Unlike a reader, which refuses a damaged page when it first reads it, the check reports every problem with
    /// its page, tree and offset and goes on. The header slots and the journal are not checked here (opening verified
    /// them); <see cref="EnvironmentSnapshot.Check(string, bool, IProgress{CheckProgress})"/> checks a directory on disk,
    /// the header slots and journal included.</para>
    /// </remarks>
    /// <param name="collectPages">Whether to fill <see cref="CheckReport.Pages"/> (one entry per page).</param>
    /// <param name="progress">Told now and then how far the check is, on the calling thread.</param>
    /// <exception cref="StorageException">The environment is closed, or the reader limit policy ended the check.</exception>
    public CheckReport Check(bool collectPages = false, IProgress<CheckProgress>? progress = null)
    {
        using var transaction = BeginRead();
        using var source = new TransactionCheckSource(this, transaction);
        return EnvironmentChecker.Check(source, collectPages, progress);
    }
}
