namespace Storage;

/// <summary>What one committed write transaction changed and wrote.</summary>
public readonly record struct CommitStats
{
    /// <summary>The committed transaction's id (0 when it changed nothing and wrote no entry).</summary>
    public long TransactionId { get; init; }

    /// <summary>Leaf pages changed or created.</summary>
    public int LeafPages { get; init; }

    /// <summary>Branch pages changed or created.</summary>
    public int BranchPages { get; init; }

    /// <summary>Overflow pages created (whole runs).</summary>
    public int OverflowPages { get; init; }

    /// <summary>Other pages (free-space bitmaps) changed.</summary>
    public int OtherPages { get; init; }

    /// <summary>All pages modified.</summary>
    public int PagesModified => LeafPages + BranchPages + OverflowPages + OtherPages;

    /// <summary>Bytes of the journal entry as written (padded, compressed if it paid).</summary>
    public long JournalBytes { get; init; }

    /// <summary>Bytes of the page records before compression.</summary>
    public long UncompressedPayloadBytes { get; init; }

    /// <summary>Whether the entry was compressed.</summary>
    public bool Compressed { get; init; }

    /// <summary>Whether the transaction was durable when the commit returned (always, unless committed <see cref="CommitDurability.Lazy"/>).</summary>
    public bool IsDurable { get; init; }
}

/// <summary>When a commit returns, relative to its journal entry reaching the disk.</summary>
public enum CommitDurability
{
    /// <summary>Returns once the transaction would survive power loss (its journal entry is durable).</summary>
    Durable,

    /// <summary>
    /// Returns once the transaction is visible; its journal entry is written, durably, with the next durable commit or
    /// within <see cref="StorageOptions.LazyCommitDelay"/>, whichever comes first. A crash before then loses it (and the
    /// lazy commits after it), never part of a transaction and never a commit before it. For bulk loads.
    /// </summary>
    Lazy,
}

/// <summary>
/// Where the time of committed write transactions went, summed over all of them since open. The phases in order:
/// waiting for the write lock, the caller's work between begin and commit (tree changes, which include the page
/// copies), then the commit: checksums, diffs, finishing the entry (compression when it pays, the entry checksum),
/// making room in the journal, appending the entry and publishing to the next writer (of which waiting for the lock the
/// flusher holds), then, with the write lock released, waiting for the durable write that covers the entry.
/// </summary>
public readonly record struct CommitPhaseTimes
{
    /// <summary>Committed write transactions that wrote a journal entry.</summary>
    public long Transactions { get; init; }

    /// <summary><see cref="StorageEnvironment.BeginWrite"/> waiting for the write transaction before it.</summary>
    public TimeSpan WriteLockWait { get; init; }

    /// <summary>From begin to commit: the caller's reads and changes (including <see cref="PageCopies"/>).</summary>
    public TimeSpan TransactionBody { get; init; }

    /// <summary>
    /// Copies of committed pages into scratch memory before their first change (part of <see cref="TransactionBody"/>):
    /// an estimate, from one copy in eight timed.
    /// </summary>
    public TimeSpan PageCopies { get; init; }

    /// <summary>Stamping each changed page with its transaction and checksum.</summary>
    public TimeSpan Checksums { get; init; }

    /// <summary>Encoding each changed page as its difference from the version before.</summary>
    public TimeSpan Diffs { get; init; }

    /// <summary>Compressing the entry (when that pays) and its checksum.</summary>
    public TimeSpan EntryFinish { get; init; }

    /// <summary>Making room in the journal: moving to a spare file, or creating one when none is ready.</summary>
    public TimeSpan JournalSwitches { get; init; }

    /// <summary>From the entry's append until the durable write covering it returned (including writes ahead of it; group commit).</summary>
    public TimeSpan DurableWrites { get; init; }

    /// <summary>Waiting for the lock a flush holds while it chooses what to write (part of <see cref="Publish"/>).</summary>
    public TimeSpan PruneLockWait { get; init; }

    /// <summary>Appending the entry and handing the commit to the next writer: page table, free space, state, and giving back versions no snapshot reads.</summary>
    public TimeSpan Publish { get; init; }
}

/// <summary>A distribution of durations: count, mean, percentiles (within about 3%) and maximum.</summary>
public readonly record struct LatencySummary
{
    /// <summary>Durations recorded.</summary>
    public long Count { get; init; }

    /// <summary>The average.</summary>
    public TimeSpan Mean { get; init; }

    /// <summary>The median.</summary>
    public TimeSpan P50 { get; init; }

    /// <summary>90th percentile.</summary>
    public TimeSpan P90 { get; init; }

    /// <summary>99th percentile.</summary>
    public TimeSpan P99 { get; init; }

    /// <summary>99.9th percentile.</summary>
    public TimeSpan P999 { get; init; }

    /// <summary>The longest.</summary>
    public TimeSpan Max { get; init; }
}

/// <summary>One flush of committed page versions to the data file.</summary>
public readonly record struct FlushStats
{
    /// <summary>1 for the first flush of this environment instance, and so on.</summary>
    public long FlushNumber { get; init; }

    /// <summary>Everything up to this transaction is now in the data file.</summary>
    public long UpToTransactionId { get; init; }

    /// <summary>Pages written (an overflow run counts all its pages).</summary>
    public long PagesWritten { get; init; }

    /// <summary>Write calls after merging adjacent pages: the seeks of this flush.</summary>
    public int Runs { get; init; }

    /// <summary>Bytes written to the data file.</summary>
    public long BytesWritten { get; init; }

    /// <summary>Leaf pages among those written.</summary>
    public long LeafPages { get; init; }

    /// <summary>Branch pages among those written.</summary>
    public long BranchPages { get; init; }

    /// <summary>Overflow pages among those written.</summary>
    public long OverflowPages { get; init; }

    /// <summary>Clean pages written back unchanged to join runs (<see cref="StorageOptions.FlushGapFillBytes"/>), counted in <see cref="BytesWritten"/> but not in <see cref="PagesWritten"/>.</summary>
    public long GapPagesWritten { get; init; }

    /// <summary>How long the writes took.</summary>
    public TimeSpan Duration { get; init; }
}

/// <summary>One tree's shape.</summary>
public readonly record struct TreeStats
{
    /// <summary>The tree's name.</summary>
    public string Name { get; init; }

    /// <summary>Number of keys.</summary>
    public long Entries { get; init; }

    /// <summary>Levels from root to leaves.</summary>
    public int Depth { get; init; }

    /// <summary>Branch pages.</summary>
    public long BranchPages { get; init; }

    /// <summary>Leaf pages.</summary>
    public long LeafPages { get; init; }

    /// <summary>Overflow pages (all pages of all runs).</summary>
    public long OverflowPages { get; init; }
}

/// <summary>
/// What an environment is doing and holding (<see cref="StorageEnvironment.GetStats()"/>): where its transactions are, and
/// then, in groups, its commits, journal, flushes, file space, memory and readers. Counters run since open.
/// </summary>
public readonly record struct EnvironmentStats
{
    /// <summary>The last committed transaction.</summary>
    public long LastTransactionId { get; init; }

    /// <summary>The last transaction whose journal entry is durable (behind <see cref="LastTransactionId"/> only while lazy commits wait).</summary>
    public long LastDurableTransactionId { get; init; }

    /// <summary>The last transaction known to be in the synced data file.</summary>
    public long LastSyncedTransactionId { get; init; }

    /// <summary>Which I/O backend the environment uses: "io_uring" (Linux) or "win32-overlapped" (Windows) through the native layer, or "managed".</summary>
    public string IoBackend { get; init; }

    /// <summary>What opening the environment found and did: entries replayed, a dropped torn entry, transactions given up.</summary>
    public RecoveryStats Recovery { get; init; }

    /// <summary>Write transactions committed, the pages they changed, where their time went and how long commits took.</summary>
    public CommitActivity Commits { get; init; }

    /// <summary>Journal writes, bytes, files, and how writes are made durable.</summary>
    public JournalActivity Journal { get; init; }

    /// <summary>Flushes of committed pages into the data file, and syncs.</summary>
    public FlushActivity Flush { get; init; }

    /// <summary>The data file: its size, pages allocated and free, space given back.</summary>
    public FileSpace Space { get; init; }

    /// <summary>Scratch memory: page versions not yet in the data file, and what snapshots pin.</summary>
    public MemoryUse Memory { get; init; }

    /// <summary>Open transactions, the oldest reader, and what reader warnings and limits did.</summary>
    public ReaderActivity Readers { get; init; }

    /// <summary>The continuous archive (<see cref="StorageOptions.ArchiveDirectory"/>); all zero and null when there is none.</summary>
    public ArchiveActivity Archive { get; init; }
}

/// <summary>The continuous archive (<see cref="EnvironmentStats.Archive"/>).</summary>
public readonly record struct ArchiveActivity
{
    /// <summary>The archive directory, or null when the environment has no archive.</summary>
    public string? Directory { get; init; }

    /// <summary>The last transaction the archive holds (-1 before its first base is written).</summary>
    public long ArchivedThroughTransactionId { get; init; }

    /// <summary>Durable transactions not in the archive yet.</summary>
    public long LagTransactions { get; init; }

    /// <summary>Incremental files shipped since open.</summary>
    public long Segments { get; init; }

    /// <summary>Full backups taken as bases since open (the first, and one after each gap).</summary>
    public long Bases { get; init; }

    /// <summary>Times the journal no longer held entries the archive needed, since open: the archive took a new base.</summary>
    public long Gaps { get; init; }

    /// <summary>Rounds that failed since open (the next round tries again).</summary>
    public long Failures { get; init; }

    /// <summary>Bytes written to the archive since open.</summary>
    public long Bytes { get; init; }

    /// <summary>What the last failure or gap said, or null.</summary>
    public string? LastError { get; init; }
}

/// <summary>Write transactions since open (<see cref="EnvironmentStats.Commits"/>).</summary>
public readonly record struct CommitActivity
{
    /// <summary>Write transactions committed since open.</summary>
    public long Count { get; init; }

    /// <summary>Pages modified by committed transactions since open.</summary>
    public long PagesModified { get; init; }

    /// <summary>Where the time of write transactions went since open, phase by phase.</summary>
    public CommitPhaseTimes Phases { get; init; }

    /// <summary>How long <see cref="WriteTransaction.Commit()"/> took, for commits that wrote an entry.</summary>
    public LatencySummary Latency { get; init; }
}

/// <summary>The journal since open (<see cref="EnvironmentStats.Journal"/>).</summary>
public readonly record struct JournalActivity
{
    /// <summary>Durable journal writes issued since open.</summary>
    public long Writes { get; init; }

    /// <summary>Journal bytes written since open.</summary>
    public long Bytes { get; init; }

    /// <summary>Journal files in use.</summary>
    public int Files { get; init; }

    /// <summary>Whether journal writes bypass the page cache (direct I/O).</summary>
    public bool DirectIo { get; init; }

    /// <summary>
    /// Whether the environment's entries go into its group's shared journal (<see cref="EnvironmentGroup"/>): then
    /// <see cref="Writes"/> counts the group's writes that carried them, which other members' entries shared.
    /// </summary>
    public bool Shared { get; init; }

    /// <summary>How journal writes are made durable now, and what the last measurement of the two ways found.</summary>
    public JournalWriteStats WriteMethod { get; init; }

    /// <summary>How long each durable journal write took.</summary>
    public LatencySummary WriteLatency { get; init; }
}

/// <summary>Flushes and syncs since open (<see cref="EnvironmentStats.Flush"/>).</summary>
public readonly record struct FlushActivity
{
    /// <summary>Flushes since open.</summary>
    public long Count { get; init; }

    /// <summary>Pages written by flushes since open.</summary>
    public long Pages { get; init; }

    /// <summary>Write calls of flushes since open.</summary>
    public long Runs { get; init; }

    /// <summary>Bytes written by flushes since open.</summary>
    public long Bytes { get; init; }

    /// <summary>Flushes since open that met a full disk while writing pages and left them, still readable in memory, to a later flush.</summary>
    public long DeferredForSpace { get; init; }

    /// <summary>Data file syncs (each followed by a header write) since open.</summary>
    public long Syncs { get; init; }
}

/// <summary>The data file's space (<see cref="EnvironmentStats.Space"/>).</summary>
public readonly record struct FileSpace
{
    /// <summary>Size of the data file.</summary>
    public long DataFileBytes { get; init; }

    /// <summary>Pages allocated so far (the high-water mark).</summary>
    public long PagesInUseOrFree { get; init; }

    /// <summary>Free pages inside the allocated part of the file.</summary>
    public long FreePages { get; init; }

    /// <summary>Bytes of the data file given back to the file system since open: free runs punched out of it, and its free end cut off.</summary>
    public long GivenBackBytes { get; init; }
}

/// <summary>Scratch memory (<see cref="EnvironmentStats.Memory"/>).</summary>
public readonly record struct MemoryUse
{
    /// <summary>Scratch holding page versions not yet in the data file (in memory, and in the scratch file while it spills).</summary>
    public long ScratchBytes { get; init; }

    /// <summary>The part of <see cref="ScratchBytes"/> held in the scratch file (<see cref="StorageOptions.SpillScratchToFile"/>).</summary>
    public long ScratchSpilledBytes { get; init; }

    /// <summary>
    /// Scratch held for open snapshots: page versions newer than the oldest snapshot, which the flusher may not write
    /// while that snapshot can still read the data file. They are freed or flushed as the snapshots end.
    /// </summary>
    public long PinnedBytes { get; init; }
}

/// <summary>Transactions and readers (<see cref="EnvironmentStats.Readers"/>).</summary>
public readonly record struct ReaderActivity
{
    /// <summary>Active read and write transactions.</summary>
    public int ActiveTransactions { get; init; }

    /// <summary>How long ago the oldest open read transaction began (zero when none is open).</summary>
    public TimeSpan OldestAge { get; init; }

    /// <summary>The snapshot (transaction id) the oldest open read transaction reads, or 0 when none is open.</summary>
    public long OldestTransactionId { get; init; }

    /// <summary>Reader warnings and limits reached since open (<see cref="StorageOptions.OnReaderWarning"/>).</summary>
    public long Warnings { get; init; }

    /// <summary>Read transactions ended by <see cref="ReaderLimitPolicy.EndOldestReader"/> since open.</summary>
    public long Ended { get; init; }

    /// <summary>Commits refused by <see cref="ReaderLimitPolicy.FailCommits"/> since open.</summary>
    public long CommitsRefused { get; init; }

    /// <summary>Transactions found collected without having been disposed since open (<see cref="StorageOptions.OnTransactionLeaked"/>).</summary>
    public long LeakedTransactions { get; init; }
}

/// <summary>What the open of an environment recovered from its journal, and what it had to give up.</summary>
public readonly record struct RecoveryStats
{
    /// <summary>Journal entries (transactions) replayed into the data file.</summary>
    public long ReplayedTransactions { get; init; }

    /// <summary>
    /// An entry after the last replayed transaction was dropped because it is incomplete or damaged: a write that never
    /// completed (never acknowledged) looks like this, and so does damage to the last entry, which cannot be told apart.
    /// </summary>
    public bool TornTailDropped { get; init; }

    /// <summary>The journal file and offset of the dropped entry, and what was found there; null when none was dropped.</summary>
    public string? TornTail { get; init; }

    /// <summary>Transactions given up by <see cref="JournalRecoveryMode.DiscardAfterDamage"/>: valid journal entries after the damage.</summary>
    public long LostTransactions { get; init; }

    /// <summary>The damage that <see cref="JournalRecoveryMode.DiscardAfterDamage"/> recovered past, in words; null when there was none.</summary>
    public string? Damage { get; init; }

    /// <summary>Where the journal files that held given-up transactions were moved; null when none were.</summary>
    public string? LostJournalsDirectory { get; init; }

    /// <summary>The header slot that was not used because it is invalid (torn or damaged), with the reason; null when both are valid.</summary>
    public string? InvalidHeaderSlot { get; init; }

    /// <summary>Journal files the environment left in place because it cannot prove they are its own (another environment's, or damaged).</summary>
    public int ForeignJournalFiles { get; init; }
}

/// <summary>How the journal makes its writes durable (<see cref="StorageOptions.JournalWriteMethod"/>).</summary>
public readonly record struct JournalWriteStats
{
    /// <summary>The method in use: <see cref="JournalWriteMethod.DirectSync"/> or <see cref="JournalWriteMethod.BufferedThenSync"/>.</summary>
    public JournalWriteMethod Method { get; init; }

    /// <summary>Median time of a direct write in the last measurement (zero before one completed, or when a method is set).</summary>
    public TimeSpan DirectSyncMedian { get; init; }

    /// <summary>Median time of a buffered write and its sync in the last measurement.</summary>
    public TimeSpan BufferedThenSyncMedian { get; init; }

    /// <summary>How many journal files' measurements chose direct writes since open.</summary>
    public long DirectSyncChosen { get; init; }

    /// <summary>How many journal files' measurements chose buffered writes and a sync since open.</summary>
    public long BufferedThenSyncChosen { get; init; }
}
