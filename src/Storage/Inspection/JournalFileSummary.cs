namespace Storage.Inspection;

/// <summary>
/// One journal file on its own (<see cref="EnvironmentSnapshot.SummarizeJournalFile"/>): its header block, the run of
/// valid entries from the first block after it, and what ends that run.
/// </summary>
/// <remarks>
/// Entries are counted from the start of the file, whatever the data file has synced; a shared file of an environment
/// group also holds entries of the group's other members, which are counted apart.
/// </remarks>
public sealed record JournalFileSummary
{
    internal JournalFileSummary()
    {
    }

    /// <summary>The file's number, from its name.</summary>
    public long Number { get; internal init; }

    /// <summary>The file.</summary>
    public string Path { get; internal init; } = "";

    /// <summary>The file's length.</summary>
    public long LengthBytes { get; internal init; }

    /// <summary>How many names (hard links) the file has; -1 where that cannot be told.</summary>
    public int LinkCount { get; internal init; }

    /// <summary>Why the header block is not a valid journal file header; null when it is (the header fields below are then set).</summary>
    public string? HeaderProblem { get; internal init; }

    /// <summary>The environment that wrote the file (the root's, for a shared file of a group).</summary>
    public ulong HeaderEnvironmentId { get; internal init; }

    /// <summary>The number the header says the file has (its writer's number, for a shared file).</summary>
    public long HeaderFileNumber { get; internal init; }

    /// <summary>The length the header says the file has.</summary>
    public long HeaderSizeBytes { get; internal init; }

    /// <summary>The transaction the header says the file's first entry carries.</summary>
    public long HeaderFirstTransactionId { get; internal init; }

    /// <summary>Whether the file is a shared journal file of an environment group.</summary>
    public bool IsShared { get; internal init; }

    /// <summary>Whether the file held entries before it was recycled (stale bytes may follow its last entry).</summary>
    public bool IsRecycled { get; internal init; }

    /// <summary>Valid entries of the environment asked about, with consecutive transaction ids.</summary>
    public int Entries { get; internal init; }

    /// <summary>The first of their transactions; -1 when there are none.</summary>
    public long FirstTransactionId { get; internal init; }

    /// <summary>The last of their transactions; -1 when there are none.</summary>
    public long LastTransactionId { get; internal init; }

    /// <summary>Their payload bytes as stored (after compression).</summary>
    public long StoredBytes { get; internal init; }

    /// <summary>Their payload bytes before compression.</summary>
    public long UncompressedBytes { get; internal init; }

    /// <summary>How many of them are compressed.</summary>
    public int CompressedEntries { get; internal init; }

    /// <summary>Entries of other members of the group, stepped over (shared files only).</summary>
    public int OtherEnvironmentEntries { get; internal init; }

    /// <summary>Where the run of entries ends: the offset of what <see cref="End"/> describes.</summary>
    public long UsedBytes { get; internal init; }

    /// <summary>What ends the run of entries.</summary>
    public JournalFileEnd End { get; internal init; }

    /// <summary>With <see cref="JournalFileEnd.ContinuesInNextFile"/>: the file the next entry is in; else -1.</summary>
    public long NextFileNumber { get; internal init; } = -1;

    /// <summary>With <see cref="JournalFileEnd.ContinuesInNextFile"/>: the transaction of the next entry; else -1.</summary>
    public long NextTransactionId { get; internal init; } = -1;

    /// <summary>With <see cref="JournalFileEnd.Damaged"/>: the valid entries found after the damage; else 0.</summary>
    public int LaterEntries { get; internal init; }

    /// <summary>With <see cref="JournalFileEnd.Damaged"/>: the first transaction of those entries.</summary>
    public long LaterFirstTransactionId { get; internal init; }

    /// <summary>With <see cref="JournalFileEnd.Damaged"/>: the last transaction of those entries.</summary>
    public long LaterLastTransactionId { get; internal init; }
}
