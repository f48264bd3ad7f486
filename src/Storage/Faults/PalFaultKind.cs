namespace Storage.Faults;

/// <summary>
/// The calls the native fault seam counts and can fail, one value per PAL_FAULT_* kind of pal.h. A call is
/// one API-level operation: the re-issues of a short write belong to the call they continue.
/// </summary>
internal enum PalFaultKind : uint
{
    /// <summary>pal_journal_write with bytes to write: a commit's durable write.</summary>
    JournalWrite = 0,

    /// <summary>The zero fill of pal_journal_presize (an <see cref="PalFaultMode.Error"/> fails it before any I/O).</summary>
    JournalPresize = 1,

    /// <summary>The fdatasync that ends pal_journal_presize.</summary>
    JournalSync = 2,

    /// <summary>One writev op of the data writer's ring: a run of adjacent pages.</summary>
    DataWrite = 3,

    /// <summary>One fsync or fdatasync op of the data writer's ring.</summary>
    DataSync = 4,

    FileAllocate = 5,

    PunchHole = 6,

    /// <summary>pal_fsync_directory, and each directory sync of pal_journal_recycle.</summary>
    DirectorySync = 7,

    /// <summary>The rename of pal_journal_recycle.</summary>
    Rename = 8,

    HardLink = 9,
}
