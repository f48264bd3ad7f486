namespace Storage.Fuzz;

/// <summary>How one input ended.</summary>
internal enum FuzzOutcome
{
    /// <summary>The target read the input without an error.</summary>
    Accepted,

    /// <summary>The target refused the input with a typed error: the contract holds.</summary>
    Rejected,

    /// <summary>The input broke the contract the way a known open finding does (see <see cref="KnownIssues"/>).</summary>
    KnownIssue,
}
