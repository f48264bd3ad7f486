using System.Runtime.InteropServices;
using Storage.Paging;
using Storage.Trees;

namespace Storage.Tests.Trees;

/// <summary>Inserts that fill holes (and move the lowest nodes up to make room for an offset) and closing holes keep a page exact.</summary>
public sealed unsafe class TreePageHoleTests
{
    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    [InlineData(4)]
    public void Random_inserts_and_removes_with_holes_keep_every_node_intact(int seed)
    {
        var random = new Random(seed);
        byte* buffer = (byte*)NativeMemory.AlignedAlloc(PageLayout.PageSizeBytes, 4096);
        try
        {
            var page = TreePage.Initialize(buffer, 42, PageFlags.Leaf, 7);
            var model = new SortedDictionary<string, byte[]>(StringComparer.Ordinal);
            byte* node = stackalloc byte[TreeNodeLayout.MaxNodeSizeBytes];
            int intoHoles = 0, withMoves = 0, compactions = 0;
            for (int step = 0; step < 20_000; step++)
            {
                if (model.Count > 0 && random.Next(3) == 0)
                {
                    int index = random.Next(model.Count);
                    var key = model.Keys.ElementAt(index);
                    page.RemoveNode(index);
                    model.Remove(key);
                }
                else
                {
                    var key = random.Next(1_000_000).ToString("x6");
                    if (model.ContainsKey(key)) continue;
                    var value = new byte[random.Next(4) == 0 ? random.Next(300) : 60];
                    random.NextBytes(value);
                    int size = TreeNodeLayout.WriteLeafNode(node, System.Text.Encoding.ASCII.GetBytes(key), value, TreeNodeLayout.NoOverflowPage);
                    int index = model.Keys.Count(k => string.CompareOrdinal(k, key) < 0);
                    int needed = size + TreeNodeLayout.SlotSizeBytes;
                    if (page.ContiguousFreeBytes >= needed)
                    {
                        page.InsertNode(index, node, size);
                    }
                    else if (page.ComputeUsedBytes() + needed <= TreeNodeLayout.UsableBytes)
                    {
                        bool gapFull = page.ContiguousFreeBytes < TreeNodeLayout.SlotSizeBytes;
                        if (page.TryInsertIntoHole(index, node, size))
                        {
                            intoHoles++;
                            if (gapFull) withMoves++;
                        }
                        else
                        {
                            compactions++;
                            page.Compact();
                            page.InsertNode(index, node, size);
                        }
                    }
                    else
                    {
                        continue;
                    }
                    model[key] = new ReadOnlySpan<byte>(node, size).ToArray();
                }

                if (step % 97 == 0)
                {
                    // A split's left page closes its holes from below; the nodes stay the same.
                    int gapBefore = page.ContiguousFreeBytes;
                    page.CloseHoles();
                    Assert.True(page.ContiguousFreeBytes >= gapBefore);
                }
                page = TreePage.Open(buffer, 42);
                Assert.Equal(model.Count, page.Count);
                int used = 0, i = 0;
                foreach (var (key, encoded) in model)
                {
                    Assert.Equal(key, System.Text.Encoding.ASCII.GetString(page.GetKey(i)));
                    byte* stored = page.GetNode(i, out int storedSize);
                    Assert.Equal(encoded, new ReadOnlySpan<byte>(stored, storedSize).ToArray());
                    used += storedSize + TreeNodeLayout.SlotSizeBytes;
                    i++;
                }
                // Throws when nodes overlap or lie below Upper.
                Assert.Equal(used, page.ComputeUsedBytes());
            }
            Assert.True(intoHoles > 100, $"{intoHoles} inserts went into holes");
            Assert.True(withMoves > 0, "some inserts moved nodes up to make room for their offset");
        }
        finally
        {
            NativeMemory.AlignedFree(buffer);
        }
    }
    [Fact]
    public void Nodes_sorted_by_offset_come_out_as_a_general_sort_orders_them()
    {
        var random = new Random(5);
        for (var round = 0; round < 500; round++)
        {
            var count = random.Next(0, TreeNodeLayout.MaxNodesPerSplit + 1);
            // As a page lists them, by slot; mostly distinct offsets, some repeated as in a damaged page, any offset of a page.
            var values = new int[count];
            for (var i = 0; i < count; i++)
            {
                var offset = random.Next(4) == 0 && i > 0 ? values[random.Next(i)] >> 16 : random.Next(PageLayout.PageSizeBytes);
                values[i] = (offset << 16) | i;
            }
            var expected = values.Order().ToArray();
            TreePage.SortByOffset(values);
            Assert.Equal(expected, values);
        }
    }
}
