namespace Storage;

/// <summary>How bad a finding of a consistency check (<see cref="CheckProblem"/>) is.</summary>
public enum ProblemSeverity
{
    /// <summary>Worth knowing, not damage.</summary>
    Info,

    /// <summary>Unusual but recoverable: one header slot invalid while the other is valid, or a torn journal tail that was never acknowledged.</summary>
    Warning,

    /// <summary>The environment is not consistent: <see cref="CheckReport.IsConsistent"/> is false.</summary>
    Error,
}
