using Storage.Paging;

namespace Storage.Transactions;

/// <summary>A page a write transaction changed, allocated or freed.</summary>
internal unsafe struct DirtyPage
{
    public ScratchBuffer Buffer;

    /// <summary>The version the transaction copied from: the base of the journal diff. Null for new pages.</summary>
    public byte* Original;

    public bool IsNew;

    public bool IsFreed;
}
