namespace Storage;

/// <summary>
/// One finding of a consistency check: what is wrong and where. A location that does not apply is -1 (numbers) or null
/// (names).
/// </summary>
/// <remarks>
/// <see cref="Kind"/> is a short, stable name of the rule that failed, for programs to match on: <c>open</c> (nothing to
/// check: no directory, no data file, neither header valid), <c>file-length</c>, <c>truncated</c>, <c>header</c>,
/// <c>journal</c>, <c>torn-tail</c>, <c>replay</c> (a page rebuilt from the journal does not match the checksum its
/// transaction stamped), <c>next-page</c>, <c>read</c>, <c>bitmap</c>, <c>free-space</c>, <c>leaked</c>, <c>hole</c>,
/// <c>page-number</c>, <c>page-type</c>, <c>checksum</c>, <c>future</c> (written by a transaction after the state checked),
/// <c>owner</c>, <c>reference</c>, <c>duplicate</c>, <c>depth</c>, <c>shape</c>, <c>node</c>, <c>key-order</c>,
/// <c>overflow</c>, <c>tree-header</c> and <c>count</c> (a tree's counters against its header).
/// </remarks>
/// <param name="Severity">How bad it is; only <see cref="ProblemSeverity.Error"/> makes the environment inconsistent.</param>
/// <param name="Kind">The rule that failed (see the remarks).</param>
/// <param name="Message">What was found, in words, without the location.</param>
/// <param name="File">The file it is in (the data file or a journal file), or null.</param>
/// <param name="PageNumber">The page it is on, or -1.</param>
/// <param name="Tree">The tree the page was reached from (<c>&lt;root&gt;</c> for the tree of tree names), or null.</param>
/// <param name="OffsetBytes">Where in <paramref name="File"/> the damaged bytes are, or -1.</param>
public sealed record CheckProblem(
    ProblemSeverity Severity,
    string Kind,
    string Message,
    string? File = null,
    long PageNumber = -1,
    string? Tree = null,
    long OffsetBytes = -1)
{
    /// <summary>One line: severity, kind, the location that applies, and the message.</summary>
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
