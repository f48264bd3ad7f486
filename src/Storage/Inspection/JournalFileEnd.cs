namespace Storage.Inspection;

/// <summary>What ends the run of valid entries in a journal file (<see cref="JournalFileSummary.End"/>).</summary>
public enum JournalFileEnd
{
    /// <summary>The file's pre-written zeros, or the end of the file: nothing was written after the last entry.</summary>
    EndOfEntries,

    /// <summary>An end marker the writer left: the next entry is in another file (<see cref="JournalFileSummary.NextFileNumber"/>).</summary>
    ContinuesInNextFile,

    /// <summary>Entries of an earlier use of the file follow (their transactions are not after the last one): not damage.</summary>
    StaleEntriesFollow,

    /// <summary>Bytes of an earlier use of a recycled file follow: not damage.</summary>
    StaleBytesFollow,

    /// <summary>An invalid entry with valid later entries after it: damage, which a strict open refuses.</summary>
    Damaged,

    /// <summary>An invalid entry with nothing valid after it: a write that never completed (or damage that looks the same).</summary>
    TornTail,
}
