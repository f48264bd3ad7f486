using Storage.Scratch;

namespace Storage.Paging;

/// <summary>The newest version of a page at or before the transaction a flush writes up to.</summary>
internal record struct FlushCandidate(long PageNumber, ScratchBuffer Buffer, long TransactionId)
{
    /// <summary>Overlapped by a newer version: dead, not written.</summary>
    public bool Dropped;
}
