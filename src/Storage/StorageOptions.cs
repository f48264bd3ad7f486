using Storage.Faults;

namespace Storage;

/// <summary>
/// How an environment is opened. Immutable; every value has a named default and is checked by
/// <see cref="Validate"/> when the environment opens.
/// </summary>
public sealed record StorageOptions
{
    /// <summary>The defaults.</summary>
    public static StorageOptions Default { get; } = new();

    /// <summary>Size of the first journal file; later files double up to <see cref="MaxJournalFileSizeBytes"/>.</summary>
    public long MinJournalFileSizeBytes { get; init; } = 1L << 20;

    /// <summary>Largest size of a journal file (a single larger transaction gets a file of its own size).</summary>
    public long MaxJournalFileSizeBytes { get; init; } = 64L << 20;

    /// <summary>
    /// When committed page versions waiting for the data file pass this, the background flush starts.
    /// Superseded versions are dropped at commit, so this bounds distinct dirty pages: a budget near the
    /// size of the hot part of the data lets repeated changes to a page reach the disk once.
    /// </summary>
    public long ScratchBudgetBytes { get; init; } = 256L << 20;

    /// <summary>
    /// The seek cost model of the flush: what one more write call costs, in bytes of a longer write. A gap of clean pages
    /// between two runs of pages being flushed, at most this long and in the page cache, is written back unchanged with
    /// them, so the two runs go in one write. The default is what a write cost on the SSD-backed disk the project is
    /// measured on (<c>results/flush.md</c>: about two pages); a spinning or network disk, where a seek costs a few
    /// hundred KiB of transfer, gets far fewer writes with 256 KiB or more. 0 writes only the pages being flushed.
    /// </summary>
    public long FlushGapFillBytes { get; init; } = 16L << 10;

    /// <summary>The background flush also runs after this long without one, so an idle environment reaches the data file.</summary>
    public TimeSpan FlushInterval { get; init; } = TimeSpan.FromSeconds(1);

    /// <summary>
    /// The longest a commit made with <see cref="CommitDurability.Lazy"/> waits before its journal entry is written
    /// (durably, with any others waiting); a durable commit, <see cref="StorageEnvironment.Checkpoint"/>, disposing
    /// the environment or 4 MiB of entries waiting writes them sooner. A crash within this time loses those commits,
    /// never part of one.
    /// </summary>
    public TimeSpan LazyCommitDelay { get; init; } = TimeSpan.FromMilliseconds(100);

    /// <summary>The data file is synced (and journals retired) at most this often, unless journals pile up.</summary>
    public TimeSpan SyncInterval { get; init; } = TimeSpan.FromSeconds(5);

    /// <summary>Journal payloads at least this large are compressed when that pays (0 turns compression off).</summary>
    public int CompressionThresholdBytes { get; init; } = 32 << 10;

    /// <summary>How long <see cref="StorageEnvironment.BeginWrite(TimeSpan?)"/> waits for the running write transaction by default.</summary>
    public TimeSpan WriteTransactionTimeout { get; init; } = Timeout.InfiniteTimeSpan;

    /// <summary>Create the directory and a new environment when none exists (otherwise opening a missing one fails).</summary>
    public bool CreateIfMissing { get; init; } = true;

    /// <summary>
    /// Whether a new environment may be created in a directory that already holds files of something else. Off by
    /// default: opening a directory that has no environment but other files in it fails with
    /// <see cref="StorageErrorCode.NotAnEnvironment"/> and creates nothing, so that a mistyped path is not quietly
    /// turned into an environment beside someone's documents.
    /// </summary>
    public bool CreateInNonEmptyDirectory { get; init; }

    /// <summary>
    /// How many bytes of journal files to keep after their entries reached the synced data file, so that an incremental
    /// backup (<see cref="StorageEnvironment.BackupIncrementalAsync(Stream, long, IProgress{BackupProgress}, CancellationToken)"/>)
    /// finds every entry committed after its base. They go to the folder <c>RetainedJournals</c> in the environment's
    /// directory, and the oldest are deleted once the folder holds more than this. 0 (the default) keeps none: an
    /// incremental backup then finds only the entries still in the journal, and says when its base is older than that.
    /// Not for a member of an environment group with shared journals, whose files the group recycles.
    /// </summary>
    public long RetainedJournalBytes { get; init; }

    /// <summary>
    /// A directory for the continuous archive, or null (the default) for none. With one, the environment keeps a full
    /// backup there as a base and then, every <see cref="ArchiveInterval"/>, ships the entries made durable since as an
    /// incremental backup file, on a thread of its own; the last ones are shipped when it is disposed. What reached the
    /// archive survives the loss of the machine, and
    /// <see cref="StorageEnvironment.RestoreFromArchiveAsync(string, string, long?, IProgress{RestoreProgress}, CancellationToken)"/>
    /// restores any transaction it reached. Its progress and lag are in <see cref="EnvironmentStats.Archive"/> and the
    /// metric <c>storage.archive.lag</c>. One directory per environment. Keep <see cref="RetainedJournalBytes"/> large
    /// enough for the archive to fall behind for a while: past that it takes a new base and counts a gap.
    /// </summary>
    public string? ArchiveDirectory { get; init; }

    /// <summary>How often the continuous archive ships (<see cref="ArchiveDirectory"/>).</summary>
    public TimeSpan ArchiveInterval { get; init; } = TimeSpan.FromSeconds(1);

    /// <summary>
    /// With <see cref="ArchiveDirectory"/>: refuse commits (<see cref="StorageErrorCode.ArchiveBehind"/>) while the
    /// archive is more than this many transactions behind the last commit. 0 (the default): never; an archive that falls
    /// behind or fails is reported, and commits go on.
    /// </summary>
    public long ArchiveMaxLagTransactions { get; init; }

    /// <summary>
    /// The most bytes a second a full backup writes (the archive's bases too); 0 (the default): as fast as it can.
    /// </summary>
    /// <remarks>
    /// <para>A backup written to the disk of the environment shares it with the journal: a commit's durable write makes
    /// every byte the disk has taken before it durable too, the backup's included. At the disk's full speed, a backup
    /// there halves commits while it runs; at a fifth of that speed it costs them little. A backup to another disk or
    /// a network stream needs no limit.</para>
    /// <para>A slower backup holds its snapshot longer: the pages committed meanwhile stay in scratch until it ends, and
    /// past <see cref="ScratchBudgetBytes"/> they go to the scratch file, which slows commits as well. Keep the budget
    /// above what the writers change during a backup.</para>
    /// </remarks>
    public long BackupBytesPerSecond { get; init; }

    /// <summary>Which I/O backend to write through: the native layer when it loads (the default), or the managed one.</summary>
    public IoBackend IoBackend { get; init; } = IoBackend.Auto;

    /// <summary>
    /// How the journal makes a commit's write durable. <see cref="JournalWriteMethod.Auto"/> (the default) measures both
    /// methods at the start of each journal file and goes on with the faster; <c>GetStats().JournalWriteMethod</c> says
    /// which is in use.
    /// </summary>
    public JournalWriteMethod JournalWriteMethod { get; init; } = JournalWriteMethod.Auto;

    /// <summary>
    /// A full leaf first hands entries to a neighbouring leaf with room (at least a sixteenth of a page free), and splits
    /// only when neither has any (the default). Random inserts then leave leaves about 84% full instead of the ~69% that
    /// splitting at once gives, so the data file is about a fifth smaller, at the cost of more pages changed per commit
    /// (the neighbour and the parent) and more CPU and journal bytes per random insert. Set false to split at once:
    /// random writes are faster and the file larger. Sequential inserts fill leaves completely either way.
    /// </summary>
    public bool FillSiblingsBeforeSplit { get; init; } = true;

    /// <summary>
    /// Run background data-file writes at the lowest best-effort I/O priority (Linux, native backend), so
    /// flushing yields to reads and to journal writes. Environments of one process share a writer per priority.
    /// </summary>
    public bool LowPriorityFlush { get; init; } = true;

    /// <summary>
    /// Advise the kernel that the data file's map is read at random (MADV_RANDOM on Linux; the default). A page fault
    /// then reads the pages it needs instead of the device's read-ahead window around them (megabytes on some disks),
    /// so a cold point lookup reads one page per level and does not evict useful pages of a file larger than memory.
    /// The engine reads ahead itself where it knows what comes next: a page's first read asks for the whole page, a
    /// cursor asks for the leaves ahead of it, and <c>GetMany</c> asks for exactly the pages its keys need. Set false to
    /// leave the map to the kernel's default read-ahead.
    /// </summary>
    public bool RandomAccessMap { get; init; } = true;

    /// <summary>
    /// What opening does when the journal is damaged in a way that is not a torn last entry (an entry damaged with
    /// valid ones after it, a journal file missing or cut short). <see cref="JournalRecoveryMode.Strict"/> (the
    /// default) fails the open with <see cref="StorageCorruptedException"/> and changes nothing;
    /// <see cref="JournalRecoveryMode.DiscardAfterDamage"/> opens at the last transaction before the damage and moves
    /// the journal files it gives up into a <c>Journals/lost-*</c> folder (see <see cref="EnvironmentStats.Recovery"/>).
    /// </summary>
    public JournalRecoveryMode JournalRecovery { get; init; } = JournalRecoveryMode.Strict;

    /// <summary>Called on the flusher's thread after each flush to the data file. Keep it short; exceptions it throws are ignored.</summary>
    public Action<FlushStats>? OnFlush { get; init; }

    /// <summary>
    /// When scratch memory stays past <see cref="ScratchBudgetBytes"/> because open snapshots keep the flusher from
    /// writing it, new page versions go to a scratch file in the environment directory (<c>scratch-*.spill</c>, owner-only,
    /// deleted when empty and at close) mapped into memory, whose pages the kernel can write out and drop under memory
    /// pressure, instead of anonymous memory, which it cannot without swap.
    /// </summary>
    public bool SpillScratchToFile { get; init; } = true;

    /// <summary>
    /// <see cref="OnReaderWarning"/> is called (once per reader) and <c>storage.readers.warnings</c> counts when the oldest
    /// read transaction has been open this long. <see cref="Timeout.InfiniteTimeSpan"/>: no warning by age.
    /// </summary>
    public TimeSpan ReaderWarningAge { get; init; } = TimeSpan.FromMinutes(1);

    /// <summary>
    /// The same warning when open snapshots pin more than this many bytes of scratch (<see cref="MemoryUse.PinnedBytes"/>).
    /// <see cref="long.MaxValue"/>: no warning by size.
    /// </summary>
    public long ReaderWarningPinnedBytes { get; init; } = 1L << 30;

    /// <summary>
    /// Called on the flusher's thread when the oldest reader passes a warning threshold or a limit (then after the policy
    /// was applied). Readers are checked every <see cref="FlushInterval"/> and whenever scratch passes its budget.
    /// Keep it short; exceptions it throws are ignored.
    /// </summary>
    public Action<ReaderWarning>? OnReaderWarning { get; init; }

    /// <summary>What to do when the oldest reader passes <see cref="ReaderLimitAge"/> or <see cref="ReaderLimitPinnedBytes"/>.</summary>
    public ReaderLimitPolicy ReaderLimitPolicy { get; init; } = ReaderLimitPolicy.None;

    /// <summary>The age at which <see cref="ReaderLimitPolicy"/> applies. <see cref="Timeout.InfiniteTimeSpan"/>: no limit by age.</summary>
    public TimeSpan ReaderLimitAge { get; init; } = Timeout.InfiniteTimeSpan;

    /// <summary>The pinned scratch bytes at which <see cref="ReaderLimitPolicy"/> applies. <see cref="long.MaxValue"/>: no limit by size.</summary>
    public long ReaderLimitPinnedBytes { get; init; } = long.MaxValue;

    /// <summary>
    /// Record where every transaction is begun (a stack trace, which costs a few microseconds per transaction), so that a
    /// leaked transaction (<see cref="OnTransactionLeaked"/>), a reader warning and a <see cref="StorageErrorCode.WriteTransactionTimeout"/>
    /// can say where theirs was begun. Off by default.
    /// </summary>
    public bool TrackTransactionStacks { get; init; }

    /// <summary>
    /// Called when a transaction is found collected without having been disposed, after what it held was released (a
    /// write transaction's lock included). Runs on the finalizer thread: keep it short and do not block; exceptions it
    /// throws are ignored. Counted in <see cref="ReaderActivity.LeakedTransactions"/> and <c>storage.transactions.leaked</c>.
    /// </summary>
    public Action<LeakedTransaction>? OnTransactionLeaked { get; init; }

    /// <summary>Test seams (a fault injector, a low transaction size limit, ...): none unless a test sets them.</summary>
    internal EnvironmentHooks Hooks { get; init; } = EnvironmentHooks.None;

    /// <summary>Checks every value; throws <see cref="ArgumentOutOfRangeException"/> naming the option and its limit.</summary>
    public void Validate()
    {
        if (MinJournalFileSizeBytes < 64 << 10 || MinJournalFileSizeBytes % 4096 != 0)
            throw new ArgumentOutOfRangeException(nameof(MinJournalFileSizeBytes), MinJournalFileSizeBytes, "Must be at least 64 KiB and a multiple of 4 KiB.");
        if (MaxJournalFileSizeBytes < MinJournalFileSizeBytes || MaxJournalFileSizeBytes % 4096 != 0 || MaxJournalFileSizeBytes > 1L << 40)
            throw new ArgumentOutOfRangeException(nameof(MaxJournalFileSizeBytes), MaxJournalFileSizeBytes, "Must be a multiple of 4 KiB between MinJournalFileSizeBytes and 1 TiB.");
        if (ScratchBudgetBytes < 1 << 20)
            throw new ArgumentOutOfRangeException(nameof(ScratchBudgetBytes), ScratchBudgetBytes, "Must be at least 1 MiB.");
        if (LazyCommitDelay < TimeSpan.Zero || LazyCommitDelay > TimeSpan.FromHours(1))
            throw new ArgumentOutOfRangeException(nameof(LazyCommitDelay), LazyCommitDelay, "Must be between 0 and 1 hour.");
        if (FlushGapFillBytes < 0) throw new ArgumentOutOfRangeException(nameof(FlushGapFillBytes), FlushGapFillBytes, "Must not be negative.");
        if (ArchiveInterval < TimeSpan.FromMilliseconds(1) || ArchiveInterval > TimeSpan.FromDays(1))
            throw new ArgumentOutOfRangeException(nameof(ArchiveInterval), ArchiveInterval, "Must be from 1 ms to a day.");
        if (ArchiveMaxLagTransactions < 0)
            throw new ArgumentOutOfRangeException(nameof(ArchiveMaxLagTransactions), ArchiveMaxLagTransactions, "Must be 0 (never refuse commits) or more.");
        if (BackupBytesPerSecond < 0)
            throw new ArgumentOutOfRangeException(nameof(BackupBytesPerSecond), BackupBytesPerSecond, "Must be 0 (no limit) or more.");
        if (RetainedJournalBytes < 0)
            throw new ArgumentOutOfRangeException(nameof(RetainedJournalBytes), RetainedJournalBytes, "Must be 0 (keep none) or more.");
        if (FlushInterval < TimeSpan.FromMilliseconds(1) || FlushInterval > TimeSpan.FromDays(1))
            throw new ArgumentOutOfRangeException(nameof(FlushInterval), FlushInterval, "Must be from 1 ms to a day.");
        if (SyncInterval < TimeSpan.FromMilliseconds(1) || SyncInterval > TimeSpan.FromDays(1))
            throw new ArgumentOutOfRangeException(nameof(SyncInterval), SyncInterval, "Must be from 1 ms to a day.");
        if (CompressionThresholdBytes < 0)
            throw new ArgumentOutOfRangeException(nameof(CompressionThresholdBytes), CompressionThresholdBytes, "Must be 0 (off) or positive.");
        if (!Enum.IsDefined(JournalRecovery))
            throw new ArgumentOutOfRangeException(nameof(JournalRecovery), JournalRecovery, "Must be Strict or DiscardAfterDamage.");
        if (!Enum.IsDefined(JournalWriteMethod))
            throw new ArgumentOutOfRangeException(nameof(JournalWriteMethod), JournalWriteMethod, "Must be Auto, DirectSync or BufferedThenSync.");
        if (!Enum.IsDefined(IoBackend))
            throw new ArgumentOutOfRangeException(nameof(IoBackend), IoBackend, "Must be Auto, Native or Managed.");
        if (WriteTransactionTimeout < TimeSpan.Zero && WriteTransactionTimeout != Timeout.InfiniteTimeSpan)
            throw new ArgumentOutOfRangeException(nameof(WriteTransactionTimeout), WriteTransactionTimeout, "Must be zero or positive, or infinite.");
        if (ReaderWarningAge < TimeSpan.Zero && ReaderWarningAge != Timeout.InfiniteTimeSpan)
            throw new ArgumentOutOfRangeException(nameof(ReaderWarningAge), ReaderWarningAge, "Must be zero or positive, or infinite.");
        if (ReaderLimitAge < TimeSpan.Zero && ReaderLimitAge != Timeout.InfiniteTimeSpan)
            throw new ArgumentOutOfRangeException(nameof(ReaderLimitAge), ReaderLimitAge, "Must be zero or positive, or infinite.");
        if (ReaderWarningPinnedBytes < 0)
            throw new ArgumentOutOfRangeException(nameof(ReaderWarningPinnedBytes), ReaderWarningPinnedBytes, "Must be zero or positive (long.MaxValue: no warning).");
        if (ReaderLimitPinnedBytes < 0)
            throw new ArgumentOutOfRangeException(nameof(ReaderLimitPinnedBytes), ReaderLimitPinnedBytes, "Must be zero or positive (long.MaxValue: no limit).");
        if (!Enum.IsDefined(ReaderLimitPolicy))
            throw new ArgumentOutOfRangeException(nameof(ReaderLimitPolicy), ReaderLimitPolicy, "Must be None, FailCommits or EndOldestReader.");
        if (ReaderLimitPolicy != ReaderLimitPolicy.None && ReaderLimitAge == Timeout.InfiniteTimeSpan && ReaderLimitPinnedBytes == long.MaxValue)
            throw new ArgumentOutOfRangeException(nameof(ReaderLimitPolicy), ReaderLimitPolicy, "A reader limit policy needs ReaderLimitAge or ReaderLimitPinnedBytes.");
    }
}
