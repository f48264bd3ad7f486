using Storage.Trees;

namespace Storage.State;

/// <summary>Where a committed transaction's journal entry ended, and the state it published: what a header needs to say it is synced.</summary>
internal readonly record struct CommitRecord(long TransactionId, long JournalFileNumber, long JournalEndOffsetBytes, long NextPageNumber, TreeHeader RootTree);
