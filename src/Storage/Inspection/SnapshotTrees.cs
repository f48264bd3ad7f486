using System.Runtime.InteropServices;
using System.Text;
using Storage.Paging;
using Storage.Platform;
using Storage.Trees;

namespace Storage.Inspection;

/// <summary>
/// Reads trees of an <see cref="EnvironmentSnapshot"/> in key order (dump, compacting copy). Damage throws
/// <see cref="InspectionException"/> naming the page; run <see cref="EnvironmentChecker"/> for the full story.
/// </summary>
internal static unsafe class SnapshotTrees
{
    /// <summary>The named trees, in the order of their UTF-8 names.</summary>
    public static List<SnapshotTree> ListTrees(EnvironmentSnapshot snapshot)
    {
        ArgumentNullException.ThrowIfNull(snapshot);
        var trees = new List<SnapshotTree>();
        ForEachEntry(snapshot, snapshot.RootTree, (key, value) =>
        {
            if (value.Length != TreeHeader.SizeBytes) throw new InspectionException($"the root tree entry {Hex.Preview(key)} is not a tree header ({value.Length} bytes)");
            var header = MemoryMarshal.Read<TreeHeader>(value);
            trees.Add(new SnapshotTree(Encoding.UTF8.GetString(key), header.Entries) { Header = header });
        });
        return trees;
    }

    /// <summary>Visits every entry of the tree in key order, resolving overflow values.</summary>
    public static void ForEachEntry(EnvironmentSnapshot snapshot, in TreeHeader tree, SnapshotEntryVisitor visitor)
    {
        ArgumentNullException.ThrowIfNull(snapshot);
        ArgumentNullException.ThrowIfNull(visitor);
        var buffers = new byte[TreeNodeLayout.MaxTreeDepth][];
        Visit(snapshot, tree.RootPage, 0, buffers, [], visitor);
    }

    private static void Visit(EnvironmentSnapshot snapshot, long pageNumber, int level, byte[][] buffers, HashSet<long> visited, SnapshotEntryVisitor visitor)
    {
        if (level >= TreeNodeLayout.MaxTreeDepth) throw new InspectionException($"page {pageNumber}: the tree is deeper than {TreeNodeLayout.MaxTreeDepth} levels (a cycle)");
        if (pageNumber < TreeNodeLayout.FirstTreePageNumber || pageNumber >= snapshot.NextPageNumber)
        {
            throw new InspectionException($"a tree refers to page {pageNumber}, outside the pages in use");
        }
        // A page reached twice would have its entries listed twice (and a chain of such branches, each twice, for ever).
        if (!visited.Add(pageNumber)) throw new InspectionException($"page {pageNumber}: the tree refers to it more than once");
        var buffer = buffers[level] ??= new byte[PageLayout.PageSizeBytes];
        if (!snapshot.TryReadPage(pageNumber, buffer, out var problem)) throw new SnapshotChangedException(problem!);
        CheckVersion(snapshot, pageNumber, buffer);
        fixed (byte* p = buffer)
        {
            try
            {
                var page = TreePage.Open(p, pageNumber);
                var count = page.Count;
                for (var i = 0; i < count; i++)
                {
                    if (page.IsLeaf)
                    {
                        var value = page.GetValue(i);
                        if (value.IsOverflow)
                        {
                            visitor(page.GetKey(i), ReadOverflow(snapshot, value.OverflowPage));
                        }
                        else
                        {
                            visitor(page.GetKey(i), value.Inline);
                        }
                    }
                    else
                    {
                        Visit(snapshot, page.GetChild(i), level + 1, buffers, visited, visitor);
                    }
                }
            }
            catch (StorageCorruptedException e)
            {
                throw new InspectionException($"page {pageNumber}: {e.Message}", e);
            }
        }
    }

    /// <summary>
    /// Checks that a page (or overflow run) read from the data file is the version of the snapshot's state: it says it is
    /// that page, no transaction after the snapshot's last wrote it, and its checksum holds. Pages the journal rebuilt were
    /// checked when they were rebuilt.
    /// </summary>
    private static void CheckVersion(EnvironmentSnapshot snapshot, long pageNumber, byte[] pageOrRun)
    {
        if (snapshot.IsFromJournal(pageNumber)) return;
        var header = MemoryMarshal.Read<PageHeader>(pageOrRun);
        string? why = null;
        if (header.PageNumber != pageNumber) why = $"says it is page {header.PageNumber}";
        else if (header.TransactionId > snapshot.TransactionId) why = $"was written by transaction {header.TransactionId}, after the snapshot's last ({snapshot.TransactionId})";
        else
        {
            fixed (byte* p = pageOrRun)
            {
                var expected = Crc32C.ComputePage(p, pageOrRun.Length);
                if (header.Checksum != expected) why = $"fails its checksum (stored {header.Checksum:x8}, computed {expected:x8})";
            }
        }
        if (why is not null) throw new SnapshotChangedException($"page {pageNumber} {why}");
    }

    /// <summary>The value bytes of an overflow run.</summary>
    public static byte[] ReadOverflow(EnvironmentSnapshot snapshot, long firstPage)
    {
        ArgumentNullException.ThrowIfNull(snapshot);
        var first = snapshot.ReadPage(firstPage);
        var header = MemoryMarshal.Read<PageHeader>(first);
        if (header.PageNumber != firstPage || (header.Flags & PageFlags.TypeMask) != PageFlags.Overflow || header.OverflowSizeBytes <= TreeLimits.MaxInlineValueSizeBytes)
        {
            throw new InspectionException($"page {firstPage} is not a valid overflow run (says page {header.PageNumber}, flags {header.Flags}, size {header.OverflowSizeBytes})");
        }
        var pages = PageLayout.PagesForOverflow(header.OverflowSizeBytes);
        if (firstPage + pages > snapshot.NextPageNumber) throw new InspectionException($"overflow run at page {firstPage} runs past the pages in use");
        var run = new byte[pages * PageLayout.PageSizeBytes];
        first.CopyTo(run, 0);
        for (var p = 1; p < pages; p++)
        {
            if (!snapshot.TryReadPage(firstPage + p, run.AsSpan(p * PageLayout.PageSizeBytes, PageLayout.PageSizeBytes), out var problem)) throw new SnapshotChangedException(problem!);
        }
        CheckVersion(snapshot, firstPage, run);
        return run.AsSpan(PageLayout.HeaderSizeBytes, header.OverflowSizeBytes).ToArray();
    }
}
