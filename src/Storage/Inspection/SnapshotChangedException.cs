namespace Storage.Inspection;

/// <summary>
/// A page read for an <see cref="EnvironmentSnapshot"/> is not the version of the snapshot's state: written by a later
/// transaction, another page, or torn (its checksum fails). In a directory another process has open, that process's
/// flusher overwrote it while it was read (open a new snapshot and start again); in a closed one, the page is damaged.
/// </summary>
public sealed class SnapshotChangedException : InspectionException
{
    /// <summary>Creates the exception.</summary>
    /// <param name="message">Which page, and how it differs from the snapshot's version.</param>
    public SnapshotChangedException(string message) : base(message)
    {
    }
}
