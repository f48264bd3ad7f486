namespace Storage;

/// <summary>Where a running <see cref="StorageEnvironment.Compact"/> stands, reported after each of its transactions.</summary>
/// <param name="PagesMoved">Pages moved so far.</param>
/// <param name="PagesToMove">Pages that lay past the target end when compaction began (or the pages moved, if more).</param>
/// <param name="Transactions">Transactions committed so far.</param>
public readonly record struct CompactionProgress(long PagesMoved, long PagesToMove, int Transactions);

/// <summary>What <see cref="StorageEnvironment.Compact"/> did.</summary>
/// <param name="PagesMoved">Pages (and overflow pages) moved from the end of the file into free pages lower down.</param>
/// <param name="Transactions">Transactions it committed.</param>
/// <param name="FileBytesBefore">The data file's length before.</param>
/// <param name="FileBytesAfter">The data file's length after (a reader that was open meanwhile may hold the end back until it ends).</param>
/// <param name="Elapsed">How long it took.</param>
public readonly record struct CompactionResult(long PagesMoved, int Transactions, long FileBytesBefore, long FileBytesAfter, TimeSpan Elapsed);
