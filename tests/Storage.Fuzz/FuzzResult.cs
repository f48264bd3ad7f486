namespace Storage.Fuzz;

/// <summary>What one input did: an outcome within the contract, or the violation (an untyped exception or a timeout).</summary>
internal sealed record FuzzResult(FuzzOutcome? Outcome, Exception? Violation, bool TimedOut, TimeSpan Elapsed)
{
    /// <summary>The typed errors the target's steps met (see <see cref="FuzzContract.Step"/>).</summary>
    public IReadOnlyList<string> Refusals { get; init; } = [];

    public bool KeepsContract => Violation is null && !TimedOut;

    public string Describe() => TimedOut ? $"TIMEOUT after {Elapsed.TotalSeconds:F1} s"
        : Violation is not null ? $"VIOLATION {Violation.GetType().FullName}: {Violation.Message}"
        : $"{Outcome}, {Refusals.Count} refusals ({Elapsed.TotalMilliseconds:F0} ms)";
}
