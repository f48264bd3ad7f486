using System.Runtime.CompilerServices;
using Storage.Paging;
using Storage.Trees;

namespace Storage.Tests.Trees;

public sealed unsafe class TreeFormatTests
{
    [Fact]
    public void On_disk_structs_have_their_documented_sizes()
    {
        Assert.Equal(PageLayout.HeaderSizeBytes, Unsafe.SizeOf<PageHeader>());
        Assert.Equal(32, sizeof(PageHeader));
        Assert.Equal(64, sizeof(TreeHeader));
        Assert.Equal(TreeHeader.SizeBytes, sizeof(TreeHeader));
        Assert.Equal(4, sizeof(LeafNodeHeader));
        Assert.Equal(LeafNodeHeader.SizeBytes, sizeof(LeafNodeHeader));
        Assert.Equal(10, sizeof(BranchNodeHeader));
        Assert.Equal(BranchNodeHeader.SizeBytes, sizeof(BranchNodeHeader));
    }

    [Fact]
    public void Two_entries_of_maximum_size_fit_one_leaf()
    {
        int maxEntryBytes = TreeNodeLayout.MaxLeafNodeSizeBytes + TreeNodeLayout.SlotSizeBytes;
        Assert.True(2 * maxEntryBytes <= TreeNodeLayout.UsableBytes);
    }

    [Theory]
    [InlineData("abc", "abd", "abd")]
    [InlineData("abc", "abcd", "abcd")]
    [InlineData("apple", "banana", "b")]
    [InlineData("a", "b", "b")]
    [InlineData("key-0001999", "key-0002000", "key-0002")]
    public void The_separator_is_the_shortest_prefix_of_the_right_key_above_the_left_key(string left, string right, string expected)
    {
        var leftKey = TreeFixture.TextKey(left);
        var rightKey = TreeFixture.TextKey(right);
        int length = BTree.ShortestSeparatorLength(leftKey, rightKey);
        Assert.Equal(expected, System.Text.Encoding.UTF8.GetString(rightKey, 0, length));
        Assert.True(rightKey.AsSpan(0, length).SequenceCompareTo(leftKey) > 0);
    }

    [Fact]
    public void An_insert_into_a_page_changes_only_the_header_the_offsets_tail_and_the_new_node()
    {
        byte* page = stackalloc byte[PageLayout.PageSizeBytes];
        var leaf = TreePage.Initialize(page, 5, PageFlags.Leaf, 1);
        byte* node = stackalloc byte[TreeNodeLayout.MaxNodeSizeBytes];
        for (int i = 0; i < 100; i += 2)
        {
            int size = TreeNodeLayout.WriteLeafNode(node, TreeFixture.Key(i), TreeFixture.Value(i, 20), TreeNodeLayout.NoOverflowPage);
            leaf.InsertNode(leaf.Count, node, size);
        }
        var before = new ReadOnlySpan<byte>(page, PageLayout.PageSizeBytes).ToArray();

        int nodeSize = TreeNodeLayout.WriteLeafNode(node, TreeFixture.Key(91), TreeFixture.Value(91, 20), TreeNodeLayout.NoOverflowPage);
        int index = leaf.SearchLeaf(TreeFixture.Key(91), out bool found);
        Assert.False(found);
        leaf.InsertNode(index, node, nodeSize);

        var after = new ReadOnlySpan<byte>(page, PageLayout.PageSizeBytes);
        int changed = 0;
        for (int i = 0; i < PageLayout.PageSizeBytes; i++)
        {
            changed += before[i] != after[i] ? 1 : 0;
        }
        int offsetsTailBytes = (leaf.Count - index) * TreeNodeLayout.SlotSizeBytes;
        Assert.InRange(changed, 1, 4 + offsetsTailBytes + nodeSize);
        Assert.Equal(TreeFixture.Key(91), leaf.GetKey(index).ToArray());
    }

    [Fact]
    public void Compaction_removes_holes_and_keeps_every_node_in_order()
    {
        byte* page = stackalloc byte[PageLayout.PageSizeBytes];
        var leaf = TreePage.Initialize(page, 5, PageFlags.Leaf, 1);
        byte* node = stackalloc byte[TreeNodeLayout.MaxNodeSizeBytes];
        for (int i = 0; i < 60; i++)
        {
            int size = TreeNodeLayout.WriteLeafNode(node, TreeFixture.Key(i), TreeFixture.Value(i, 50), TreeNodeLayout.NoOverflowPage);
            leaf.InsertNode(leaf.Count, node, size);
        }
        for (int i = 58; i >= 0; i -= 3)
        {
            leaf.RemoveNode(i);
        }
        int usedBefore = leaf.ComputeUsedBytes();
        Assert.True(leaf.ContiguousFreeBytes < TreeNodeLayout.UsableBytes - usedBefore, "the removes left holes");

        leaf.Compact();

        Assert.Equal(usedBefore, leaf.ComputeUsedBytes());
        Assert.Equal(TreeNodeLayout.UsableBytes - usedBefore, leaf.ContiguousFreeBytes);
        for (int i = 1; i < leaf.Count; i++)
        {
            Assert.True(leaf.GetKey(i - 1).SequenceCompareTo(leaf.GetKey(i)) < 0);
            long number = System.Buffers.Binary.BinaryPrimitives.ReadInt64BigEndian(leaf.GetKey(i));
            Assert.Equal(TreeFixture.Value(number, 50), leaf.GetValue(i).Inline.ToArray());
        }
    }
}
