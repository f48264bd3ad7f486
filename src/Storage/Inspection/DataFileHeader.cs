using Storage.State;

namespace Storage.Inspection;

/// <summary>
/// A valid header slot of the data file: what the data file held when it was last synced, and where the journal goes on
/// from there.
/// </summary>
/// <param name="FormatVersion">The on-disk format.</param>
/// <param name="PageSizeBytes">The page size the file was made with.</param>
/// <param name="EnvironmentId">The environment's random id, which its journal entries carry.</param>
/// <param name="Sequence">Counts header writes; of two valid slots, the higher sequence is current.</param>
/// <param name="LastSyncedTransactionId">Every transaction up to this one is in the data file, which was synced before this header was written.</param>
/// <param name="NextPageNumber">Pages at or past this number were never allocated, as of that transaction.</param>
/// <param name="JournalFileNumber">The journal file where the entry after <paramref name="LastSyncedTransactionId"/> starts.</param>
/// <param name="JournalOffsetBytes">Where in that file it starts.</param>
/// <param name="RootPage">The root page of the tree of tree names, as of that transaction.</param>
public readonly record struct DataFileHeader(
    int FormatVersion,
    int PageSizeBytes,
    ulong EnvironmentId,
    long Sequence,
    long LastSyncedTransactionId,
    long NextPageNumber,
    long JournalFileNumber,
    long JournalOffsetBytes,
    long RootPage)
{
    internal static DataFileHeader From(in FileHeader header) => new(
        header.FormatVersion,
        header.PageSizeBytes,
        header.EnvironmentId,
        header.Sequence,
        header.LastSyncedTransactionId,
        header.NextPageNumber,
        header.JournalFileNumber,
        header.JournalOffsetBytes,
        header.RootTree.RootPage);
}
