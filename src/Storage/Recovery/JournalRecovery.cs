using Storage.Journal;
using Storage.Paging;
using Storage.State;
using Storage.Trees;

namespace Storage.Recovery;

/// <summary>
/// Replays the journal entries that follow the last synced transaction into the data file, by the rules of
/// <see cref="JournalReplay"/>, then verifies every rebuilt page against the checksum its last transaction
/// stamped before anything is written.
/// </summary>
internal sealed class JournalRecovery : IDisposable
{
    private readonly DataFile _dataFile;
    private readonly ReplayedPages _pages;

    public JournalRecovery(DataFile dataFile, in FileHeader header)
    {
        _dataFile = dataFile;
        _pages = new ReplayedPages(dataFile.Handle, dataFile.Path);
        LastTransactionId = header.LastSyncedTransactionId;
        NextPageNumber = header.NextPageNumber;
        RootTree = header.RootTree;
    }

    public long LastTransactionId { get; private set; }

    public long NextPageNumber { get; private set; }

    public TreeHeader RootTree { get; private set; }

    public int EntriesReplayed { get; private set; }

    /// <summary>Walks the journal and rebuilds the pages it changed, in memory. Damage is in the result, for the caller to judge.</summary>
    public JournalWalkResult Replay(string journalDirectory, in FileHeader header)
    {
        return JournalReplay.Walk(JournalEntryReader.ListFiles(journalDirectory), journalDirectory, header,
            (in JournalEntryHeader entry, ReadOnlySpan<byte> payload, string path, long offset) =>
            {
                _pages.Apply(entry, payload, path, offset, NextPageNumber);
                LastTransactionId = entry.TransactionId;
                NextPageNumber = entry.NextPageNumber;
                RootTree = entry.RootTree;
                EntriesReplayed++;
                return true;
            });
    }

    /// <summary>Every rebuilt page must match its stamped checksum; throws <see cref="StorageCorruptedException"/> for the first that does not.</summary>
    public void VerifyPages() => _pages.Verify();

    /// <summary>Writes the rebuilt pages (sorted, adjacent ones merged) and syncs the data file.</summary>
    public void WritePages()
    {
        var pages = _pages.SortedByPage();
        long end = NextPageNumber;
        foreach (var (page, buffer) in pages) end = Math.Max(end, page + buffer.PageCount);
        _dataFile.EnsurePageCount(end);
        if (pages.Count > 0) _dataFile.WriteSorted(pages);
        _dataFile.Sync();
    }

    public void Dispose() => _pages.Dispose();
}
