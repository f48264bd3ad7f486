namespace Storage.Inspection;

/// <summary>
/// A journal file's valid header block, and how many names the file has, as
/// <see cref="EnvironmentSnapshot.ReadJournalFileHeader"/> reads them without reading any entry.
/// </summary>
/// <param name="EnvironmentId">The environment that wrote the file (the root's, for a shared file of a group).</param>
/// <param name="FileNumber">The number the header says the file has (its writer's number, for a shared file).</param>
/// <param name="SizeBytes">The length the header says the file has.</param>
/// <param name="FirstTransactionId">The transaction the header says the file's first entry carries.</param>
/// <param name="IsShared">Whether the file is a shared journal file of an environment group.</param>
/// <param name="IsRecycled">Whether the file held entries before it was recycled.</param>
/// <param name="LinkCount">How many names (hard links) the file has; -1 where that cannot be told.</param>
public sealed record JournalFileHeaderSummary(ulong EnvironmentId, long FileNumber, long SizeBytes, long FirstTransactionId, bool IsShared, bool IsRecycled, int LinkCount);
