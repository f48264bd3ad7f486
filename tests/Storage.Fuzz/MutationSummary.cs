namespace Storage.Fuzz;

/// <summary>What a mutation pass did, and the inputs that broke the contract.</summary>
internal sealed record MutationSummary(string Target, int Executions, int Accepted, int Rejected, IReadOnlyList<(byte[] Input, FuzzResult Result)> Violations, TimeSpan Elapsed);
