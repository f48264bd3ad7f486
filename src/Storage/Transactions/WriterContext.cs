using System.Diagnostics;
using Storage.Allocation;
using Storage.Commit;
using Storage.Scratch;
using Storage.State;
using Storage.Trees;

namespace Storage.Transactions;

/// <summary>
/// What the environment's single write transaction works with, kept from one write transaction to the next (they run one at
/// a time): its dirty pages, the trees' working arrays, the maps of the lines each page changed, the scratch memory its
/// copies live in, and the free-space map it allocates from. The page transaction of a writer holds it; a reader's has none.
/// </summary>
internal sealed class WriterContext(ScratchPool scratch, FreeSpaceMap freeSpace, EnvironmentHealth health, bool fillSiblingsBeforeSplit) : IDisposable
{
    /// <summary>The pages the write transaction changed, allocated or freed, by page number.</summary>
    public Dictionary<long, DirtyPage> DirtyPages { get; } = [];

    /// <summary>The working arrays of the write transaction's trees.</summary>
    public TreeWorkspace Workspace { get; } = new() { FillSiblingsBeforeSplit = fillSiblingsBeforeSplit };

    /// <summary>The maps of the lines each page of the write transaction changed.</summary>
    public WrittenLines Lines { get; } = new();

    /// <summary>Pages copied on their first change since open (one in <see cref="PageTransaction.CopyTimingInterval"/> is timed).</summary>
    public int PageCopies;

    public ScratchPool Scratch { get; } = scratch;

    public FreeSpaceMap FreeSpace { get; } = freeSpace;

    public EnvironmentHealth Health { get; } = health;

    /// <summary>A write transaction begins: the last one left nothing behind.</summary>
    public void Begin()
    {
        Debug.Assert(DirtyPages.Count == 0, "the previous write transaction left no dirty pages");
        Lines.Reset();
    }

    public void Dispose() => Lines.Dispose();
}
