using Storage.Trees;

namespace Storage.State;

/// <summary>
/// What one committed transaction published: immutable, shared by every transaction that reads that
/// snapshot. Page contents newer than the data file live in the <see cref="Paging.PageTable"/>.
/// </summary>
internal sealed class EnvironmentState
{
    public EnvironmentState(long transactionId, TreeHeader rootTree, long nextPageNumber)
    {
        TransactionId = transactionId;
        RootTree = rootTree;
        NextPageNumber = nextPageNumber;
    }

    public long TransactionId { get; }

    public TreeHeader RootTree { get; }

    /// <summary>Pages at or after this number have never been allocated in this snapshot.</summary>
    public long NextPageNumber { get; }
}
