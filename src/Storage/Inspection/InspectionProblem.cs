namespace Storage.Inspection;

/// <summary>How bad a finding of the inspection is.</summary>
internal enum ProblemSeverity
{
    /// <summary>Worth knowing, not damage (a torn journal tail that was never acknowledged).</summary>
    Info,

    /// <summary>Unusual but recoverable (one header slot invalid while the other is valid).</summary>
    Warning,

    /// <summary>The environment is not consistent.</summary>
    Error,
}

/// <summary>
/// One finding of the inspection: what is wrong and where (file, page, tree and byte offset in the file;
/// -1 or null where it does not apply).
/// </summary>
internal sealed record InspectionProblem(
    ProblemSeverity Severity,
    string Kind,
    string Message,
    string? File = null,
    long PageNumber = -1,
    string? Tree = null,
    long OffsetBytes = -1)
{
    public override string ToString()
    {
        var where = new List<string>(4);
        if (PageNumber >= 0) where.Add($"page {PageNumber}");
        if (Tree is not null) where.Add($"tree '{Tree}'");
        if (File is not null) where.Add($"file {Path.GetFileName(File)}");
        if (OffsetBytes >= 0) where.Add($"offset {OffsetBytes}");
        var label = Severity switch
        {
            ProblemSeverity.Error => "error",
            ProblemSeverity.Warning => "warning",
            _ => "info",
        };
        return where.Count == 0 ? $"{label} [{Kind}] {Message}" : $"{label} [{Kind}] {string.Join(", ", where)}: {Message}";
    }
}

/// <summary>An environment that cannot be inspected at all (no data file, neither header valid); the message is one line.</summary>
internal class InspectionException : Exception
{
    public InspectionException(string message, Exception? inner = null) : base(message, inner)
    {
    }
}

/// <summary>
/// A page read for a snapshot is not the version the snapshot's state has: newer than its last transaction, another page,
/// or torn (its checksum fails). In a directory another process has open, the flusher overwrote it while it was being
/// read (build the snapshot again); in a closed one, the page is damaged.
/// </summary>
internal sealed class SnapshotChangedException(string message) : InspectionException(message);
