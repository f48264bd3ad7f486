namespace Storage.Inspection;

/// <summary>
/// What a walk of the journal from the synced header found (<see cref="EnvironmentSnapshot.JournalWalk"/>): where opening the
/// environment would end its replay, the torn last entry it would drop, and damage that a strict open refuses.
/// </summary>
/// <param name="LastTransactionId">The last transaction the replay reaches (with damage: the last before it).</param>
/// <param name="TornTailReason">What the entry after the last one is, when it was dropped as a write that never completed; else null.</param>
/// <param name="TornTailPath">The journal file of that entry, or null.</param>
/// <param name="TornTailOffsetBytes">Where in that file it is, or -1.</param>
/// <param name="DamageMessage">Damage that is not a torn tail (an invalid entry with valid ones after it), in words; null when the journal is sound.</param>
/// <param name="LostDescription">What an open that accepts the damage would give up, in words; null when the journal is sound.</param>
/// <param name="LostEntries">How many valid entries follow the damage (all given up by such an open); 0 when the journal is sound.</param>
/// <param name="FirstLostTransactionId">The first of their transactions, when there are any.</param>
/// <param name="LastLostTransactionId">The last of their transactions, when there are any.</param>
public sealed record JournalWalkSummary(
    long LastTransactionId,
    string? TornTailReason,
    string? TornTailPath,
    long TornTailOffsetBytes,
    string? DamageMessage,
    string? LostDescription,
    int LostEntries,
    long FirstLostTransactionId,
    long LastLostTransactionId)
{
    /// <summary>Whether a torn last entry is dropped.</summary>
    public bool TornTailDropped => TornTailPath is not null;

    /// <summary>Whether the journal is damaged: a strict open fails.</summary>
    public bool IsDamaged => DamageMessage is not null;

    internal static JournalWalkSummary From(Recovery.JournalWalkResult walk) => new(
        walk.LastTransactionId,
        walk.TornTailReason,
        walk.TornTailPath,
        walk.TornTailOffsetBytes,
        walk.Damage?.Message,
        walk.Damage?.LostDescription,
        walk.Damage?.Lost.Count ?? 0,
        walk.Damage?.Lost.FirstTransactionId ?? 0,
        walk.Damage?.Lost.LastTransactionId ?? 0);
}
