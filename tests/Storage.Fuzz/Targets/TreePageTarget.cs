using Storage.Paging;
using Storage.Trees;

namespace Storage.Fuzz.Targets;

/// <summary>
/// <c>tree-page</c>: the first 8 KiB of the input are a page (zero-padded), in memory with inaccessible pages on
/// both sides. The expected page number is the one the page claims, or the 8 bytes after the page when the input
/// has them (so the mismatch check is reached too). After <see cref="TreePage.Open"/> accepts it, every node is
/// read through the accessors, every span they hand out is checked to lie inside the page and read whole, the key
/// heads are checked against the keys, and the page's own keys are searched for (to insert, and to look up).
/// </summary>
internal static unsafe class TreePageTarget
{
    public static void Run(byte[] input)
    {
        using var page = new GuardedPage();
        page.Load(input);
        var expected = input.Length >= PageLayout.PageSizeBytes + 8
            ? BitConverter.ToInt64(input, PageLayout.PageSizeBytes)
            : ((PageHeader*)page.Pointer)->PageNumber;
        var tree = TreePage.Open(page.Pointer, expected);
        var count = tree.Count;
        if (count < 0 || tree.ContiguousFreeBytes < 0) throw new FuzzInvariantException($"negative count {count} or free space {tree.ContiguousFreeBytes}");
        FuzzContract.Step(() => TreePage.Open(page.Pointer, expected).ComputeUsedBytes());
        FuzzContract.Step(() => TreePage.Open(page.Pointer, expected).CheckKeyHeads());
        long checksum = 0;
        for (var i = 0; i < count; i++)
        {
            var index = i;
            FuzzContract.Step(() => checksum += ReadNode(page, expected, index));
        }
        // Searches compare against every key they pass; a probe key from each node, and keys no node has.
        for (var i = 0; i < count; i++)
        {
            var index = i;
            FuzzContract.Step(() => Search(page, expected, TreePage.Open(page.Pointer, expected).GetKey(index).ToArray()));
        }
        FuzzContract.Step(() => Search(page, expected, [0]));
        FuzzContract.Step(() => Search(page, expected, [0xFF, 0xFF, 0xFF]));
        GC.KeepAlive(checksum);
    }

    private static long ReadNode(GuardedPage page, long expected, int index)
    {
        var tree = TreePage.Open(page.Pointer, expected);
        var key = tree.GetKey(index);
        Inside(page, key, "key", index);
        long sum = Sum(key);
        var nodeSize = tree.GetNodeSize(index);
        var node = tree.GetNode(index, out var nodeBytes);
        if (nodeBytes != nodeSize || nodeBytes <= 0) throw new FuzzInvariantException($"node {index}: GetNode says {nodeBytes} bytes, GetNodeSize {nodeSize}");
        Inside(page, new ReadOnlySpan<byte>(node, nodeBytes), "node", index);
        sum += Sum(new ReadOnlySpan<byte>(node, nodeBytes));
        if (tree.IsLeaf)
        {
            var value = tree.GetValue(index);
            if (value.IsOverflow)
            {
                if (value.OverflowPage < TreeNodeLayout.FirstTreePageNumber) throw new FuzzInvariantException($"node {index}: overflow reference {value.OverflowPage} accepted");
                sum += value.OverflowPage;
            }
            else
            {
                Inside(page, value.Inline, "value", index);
                sum += Sum(value.Inline);
            }
        }
        else
        {
            var child = tree.GetChild(index);
            if (child < TreeNodeLayout.FirstTreePageNumber || child == expected) throw new FuzzInvariantException($"node {index}: child page {child} accepted");
            sum += child;
        }
        return sum;
    }

    private static void Search(GuardedPage page, long expected, byte[] key)
    {
        var tree = TreePage.Open(page.Pointer, expected);
        if (tree.IsLeaf)
        {
            var at = tree.SearchLeaf(key, out _);
            if (at < 0 || at > tree.Count) throw new FuzzInvariantException($"SearchLeaf gave {at} of {tree.Count}");
            var found = tree.FindInLeaf(key);
            if (found < -1 || found >= tree.Count) throw new FuzzInvariantException($"FindInLeaf gave {found} of {tree.Count}");
        }
        else
        {
            var at = tree.SearchBranch(key);
            if (at < 0 || at >= tree.Count) throw new FuzzInvariantException($"SearchBranch gave {at} of {tree.Count}");
        }
    }

    private static void Inside(GuardedPage page, ReadOnlySpan<byte> span, string what, int index)
    {
        if (!page.Contains(span)) throw new FuzzInvariantException($"node {index}: the {what} ({span.Length} bytes) reaches outside the page");
    }

    /// <summary>Reads every byte, as a caller copying the key or value would.</summary>
    private static long Sum(ReadOnlySpan<byte> bytes)
    {
        long sum = 0;
        foreach (var b in bytes) sum += b;
        return sum;
    }
}
