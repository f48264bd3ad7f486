using Storage.Commit;
using Storage.Scratch;

namespace Storage.Transactions;

/// <summary>A page a write transaction changed, allocated or freed.</summary>
internal unsafe struct DirtyPage
{
    public ScratchBuffer Buffer;

    /// <summary>The version the transaction copied from: the base of the journal diff. Null for new pages.</summary>
    public byte* Original;

    /// <summary>The lines of a changed page its writes touched (see <see cref="WrittenLines"/>); null for new pages.</summary>
    public ulong* Lines;

    public bool IsNew;

    public bool IsFreed;
}
