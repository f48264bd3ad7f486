namespace Storage.Commit;

/// <summary>A commit appended to the journal and waiting for its durable write: its stats, and when it began and was appended (stopwatch ticks).</summary>
internal readonly record struct PendingCommit(CommitStats Stats, long StartedTimestamp, long AppendedTimestamp);
