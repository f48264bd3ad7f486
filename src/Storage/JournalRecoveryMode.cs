namespace Storage;

/// <summary>How opening an environment treats a damaged journal (see <see cref="StorageOptions.JournalRecovery"/>).</summary>
public enum JournalRecoveryMode
{
    /// <summary>
    /// Replay every journal entry after the last sync. An invalid last entry is a write that never completed (it
    /// was never acknowledged) and is dropped; any other damage fails the open with <see cref="StorageCorruptedException"/>.
    /// </summary>
    Strict,

    /// <summary>
    /// Replay up to the last valid transaction before the damage and give up the rest, keeping the journal files that
    /// held it in a <c>Journals/lost-*</c> folder. Still fails when what is kept cannot be made consistent (a damaged
    /// data-file page, a header whose journal is gone while the other header is damaged).
    /// </summary>
    DiscardAfterDamage,
}
