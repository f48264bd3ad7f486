namespace Storage.Journal;

/// <summary>
/// An environment's journal as its commit path, flusher and recovery use it: entries appended and made durable in order,
/// the files that hold them, and their retirement once the data file is synced past them. An environment alone has a
/// <see cref="JournalWriter"/> of its own; a member of an environment group with shared journals has a
/// <see cref="MemberJournal"/>, whose entries go out in the group's writes.
/// </summary>
internal unsafe interface IEnvironmentJournal : IDisposable
{
    /// <summary>Committers waiting for their entries to be durable (group commit).</summary>
    DurableWaiters Waiters { get; }

    /// <summary>Attaches the commit path told of this environment's durable writes; once, at open.</summary>
    void Attach(IJournalListener listener);

    /// <summary>Whether the entries go into a group's shared journal, whose files this environment holds names of whether it commits or not.</summary>
    bool IsShared { get; }

    /// <summary>
    /// What this environment may hold of its journal's files before it asks for a flush: as much as
    /// <paramref name="filesBeforeSync"/> files of the largest size the journal makes.
    /// </summary>
    long HeldBytesBeforeFlush(int filesBeforeSync);

    /// <summary>Durable writes that carried this environment's entries (and its end markers).</summary>
    long DurableWrites { get; }

    /// <summary>Bytes of this environment's entries written.</summary>
    long BytesWritten { get; }

    /// <summary>Whether the current file was opened O_DIRECT.</summary>
    bool IsDirect { get; }

    /// <summary>How entries are made durable: measured per file.</summary>
    DurableWritePolicy WritePolicy { get; }

    /// <summary>Bytes of the journal files this environment holds (in use and spare).</summary>
    long TotalBytes { get; }

    /// <summary>Journal files in use (holding entries not yet retired).</summary>
    int FileCount { get; }

    /// <summary>Where this environment's next entry goes: its number for the current file, and the offset.</summary>
    (long FileNumber, long OffsetBytes) Position { get; }

    /// <summary>At open: appends after the last entry of an existing file of its own (recovery checked it).</summary>
    void Continue(long number, string path, long positionBytes, long lastTransactionId);

    /// <summary>At open, after recovery: a new file for <paramref name="firstTransactionId"/> (durable before it returns).</summary>
    void StartFile(long firstTransactionId);

    /// <summary>Makes room for an entry; a failure here leaves the journal as it was (only this transaction fails).</summary>
    void Reserve(long lengthBytes, long transactionId);

    /// <summary>Whether a write failed or the journal was closed: no entry waiting will be written.</summary>
    bool IsFailedOrClosed { get; }

    /// <summary>Throws when a write failed or the journal was closed, for a commit waiting for <paramref name="transactionId"/>.</summary>
    void ThrowIfFailedOrClosed(long transactionId);

    /// <summary>The last transaction of this environment whose entry is durable.</summary>
    long DurableTransactionId { get; }

    /// <summary>Whether entries of this environment wait to be written.</summary>
    bool HasPendingEntries { get; }

    /// <summary>
    /// Writes of this environment's entries that have taken their entries and not yet handed their commits over
    /// (<see cref="IJournalListener.BecameDurable"/> returned, or the write failed). While none is, every durable commit is published and
    /// handed to the flusher, and any later write holds every entry appended before it begins.
    /// </summary>
    int WritesUnderWay { get; }

    /// <summary>
    /// The stamp the next entry is built with (<see cref="JournalEntryHeader.SharedFileStamp"/>): the shared file's in use in a
    /// group with shared journals, else 0. The writer restamps an entry that a file switch overtook.
    /// </summary>
    int EntryStamp { get; }

    /// <summary>When the oldest entry of this environment waiting was appended (a stopwatch timestamp), or 0.</summary>
    long PendingSinceTimestamp { get; }

    /// <summary>Bytes of this environment's entries waiting to be written.</summary>
    long PendingBytes { get; }

    /// <summary>Adds an entry, after <see cref="Reserve"/>, to those the next durable write takes; returns where it will be.</summary>
    (long FileNumber, long OffsetBytes) Append(byte* entry, long lengthBytes, long transactionId);

    /// <summary>Writes the entries waiting, durably, in one write; returns whether there were any.</summary>
    bool WritePending();

    /// <summary>
    /// Whether <paramref name="transactionId"/>'s entry is in a write already under way that another thread makes (a group's
    /// writer carrying another member's commit): its committer then waits for that write instead of writing.
    /// </summary>
    bool IsInWriteUnderWay(long transactionId);

    /// <summary>Retires every file before <paramref name="firstNeededFileNumber"/>: their entries are all in the synced data file.</summary>
    int Retire(long firstNeededFileNumber);

    /// <summary>At a clean close: where the journal goes on, in as little space as it can (see <see cref="JournalWriter.StartSmallFile"/>).</summary>
    (long FileNumber, long OffsetBytes) StartSmallFile(long firstTransactionId);

    /// <summary>At a clean close: deletes spare files until the journal takes at most <paramref name="keepBytes"/>.</summary>
    void TrimSpares(long keepBytes);
}
