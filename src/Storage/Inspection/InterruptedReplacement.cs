namespace Storage.Inspection;

/// <summary>
/// A replacement of a branch environment (<see cref="EnvironmentGroup.ReplaceBranch"/>) that a crash interrupted: its
/// intent file is still next to the branch's directory, and the next open of the branch completes the replacement.
/// </summary>
/// <param name="IntentPath">The intent file.</param>
/// <param name="ReplacementPath">The directory that was to replace the branch; null when the intent cannot be read or is damaged.</param>
/// <param name="ReadError">Why the intent cannot be read; null when it was read (or is damaged).</param>
public sealed record InterruptedReplacement(string IntentPath, string? ReplacementPath, string? ReadError)
{
    /// <summary>Whether the intent was read but is damaged: the branch does not open until it is repaired.</summary>
    public bool IsDamaged => ReplacementPath is null && ReadError is null;
}
