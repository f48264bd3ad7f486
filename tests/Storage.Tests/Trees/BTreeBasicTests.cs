using Storage.Trees;

namespace Storage.Tests.Trees;

public sealed class BTreeBasicTests
{
    [Fact]
    public void A_new_tree_is_one_empty_root_leaf()
    {
        using var fixture = new TreeFixture();
        Assert.Equal(1, fixture.State.Depth);
        Assert.Equal(1, fixture.State.LeafPages);
        Assert.Equal(0, fixture.State.BranchPages);
        Assert.Equal(0, fixture.State.Entries);
        Assert.True(fixture.State.IsDirty);
        Assert.False(fixture.Tree.TryGet(TreeFixture.Key(1), out _));
        Assert.False(fixture.Tree.Delete(TreeFixture.Key(1)));
        Assert.False(fixture.Tree.CreateCursor().SeekFirst());
        Assert.Equal(0, fixture.Tree.CountEntriesByWalking());
        fixture.Check();
    }

    [Fact]
    public void Put_then_get_returns_the_value_and_replace_overwrites_it()
    {
        using var fixture = new TreeFixture();
        var key = TreeFixture.TextKey("hello");
        fixture.Tree.Put(key, TreeFixture.TextKey("world"));
        Assert.Equal(TreeFixture.TextKey("world"), fixture.Get(key));

        fixture.Tree.Put(key, TreeFixture.TextKey("there, world"));
        Assert.Equal(TreeFixture.TextKey("there, world"), fixture.Get(key));
        fixture.Tree.Put(key, TreeFixture.TextKey("x"));
        Assert.Equal(TreeFixture.TextKey("x"), fixture.Get(key));
        fixture.Tree.Put(key, ReadOnlySpan<byte>.Empty);
        Assert.True(fixture.Tree.TryGet(key, out var empty));
        Assert.True(empty.IsEmpty);
        Assert.Equal(1, fixture.State.Entries);
        fixture.Check();
    }

    [Fact]
    public void Every_change_marks_the_state_dirty_and_bumps_its_version()
    {
        using var fixture = new TreeFixture();
        fixture.State.IsDirty = false;
        long version = fixture.State.Version;

        fixture.Tree.Put(TreeFixture.Key(1), TreeFixture.Value(1, 10));
        Assert.True(fixture.State.IsDirty);
        Assert.True(fixture.State.Version > version);

        version = fixture.State.Version;
        fixture.Tree.Put(TreeFixture.Key(1), TreeFixture.Value(2, 10));
        Assert.True(fixture.State.Version > version);

        version = fixture.State.Version;
        Assert.True(fixture.Tree.Delete(TreeFixture.Key(1)));
        Assert.True(fixture.State.Version > version);

        version = fixture.State.Version;
        Assert.False(fixture.Tree.Delete(TreeFixture.Key(1)));
        Assert.False(fixture.Tree.TryGet(TreeFixture.Key(1), out _));
        Assert.Equal(version, fixture.State.Version);
    }

    [Fact]
    public void Keys_must_be_between_1_and_1024_bytes()
    {
        using var fixture = new TreeFixture();
        Assert.Throws<ArgumentException>(() => fixture.Tree.Put(Array.Empty<byte>(), new byte[1]));
        Assert.Throws<ArgumentException>(() => fixture.Tree.Put(new byte[1025], new byte[1]));
        Assert.Throws<ArgumentException>(() => fixture.Tree.TryGet(new byte[1025], out _));
        Assert.Throws<ArgumentException>(() => fixture.Tree.Delete(Array.Empty<byte>()));
        fixture.Tree.Put(new byte[1024], new byte[1]);
        fixture.Tree.Put(new byte[1], new byte[1]);
        Assert.Equal(2, fixture.State.Entries);
    }

    [Fact]
    public void Maximum_size_keys_with_maximum_inline_values_split_and_merge_correctly()
    {
        using var fixture = new TreeFixture();
        const int count = 300;
        var keys = new List<byte[]>();
        for (int i = 0; i < count; i++)
        {
            // Keys differ only in their last two bytes, so separators are full-length too.
            var key = new byte[TreeLimits.MaxKeySizeBytes];
            key.AsSpan().Fill(0x55);
            key[^2] = (byte)(i / 251);
            key[^1] = (byte)(i % 251);
            keys.Add(key);
            fixture.Tree.Put(key, TreeFixture.Value(i, TreeLimits.MaxInlineValueSizeBytes));
        }
        fixture.Check();
        Assert.Equal(0, fixture.State.OverflowPages);
        Assert.True(fixture.State.Depth >= 3, "1 KiB separators give branches of at most 7 children");
        for (int i = 0; i < count; i++)
        {
            Assert.Equal(TreeFixture.Value(i, TreeLimits.MaxInlineValueSizeBytes), fixture.Get(keys[i]));
        }
        for (int i = 0; i < count; i += 2)
        {
            Assert.True(fixture.Tree.Delete(keys[i]));
        }
        fixture.Check();
        for (int i = 1; i < count; i += 2)
        {
            Assert.True(fixture.Tree.Delete(keys[i]));
        }
        fixture.Check();
        Assert.Equal(1, fixture.State.Depth);
        Assert.Equal(1, fixture.Store.AllocatedPageCount);
    }

    [Fact]
    public void A_value_read_from_the_tree_can_be_written_back_under_another_key()
    {
        using var fixture = new TreeFixture();
        for (int i = 0; i < 50; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, 150));
        }
        // The spans point into the leaf being changed (and rewritten, when the insert compacts or splits it).
        for (int i = 0; i < 50; i++)
        {
            Assert.True(fixture.Tree.TryGet(TreeFixture.Key(i), out var value));
            fixture.Tree.Put(TreeFixture.Key(1000 + i), value);
            Assert.True(fixture.Tree.TryGet(TreeFixture.Key(i), out value));
            fixture.Tree.Put(TreeFixture.Key(i), value[..100]);
        }
        for (int i = 0; i < 50; i++)
        {
            Assert.Equal(TreeFixture.Value(i, 150), fixture.Get(TreeFixture.Key(1000 + i)));
            Assert.Equal(TreeFixture.Value(i, 100), fixture.Get(TreeFixture.Key(i)));
        }
        fixture.Check();
    }

    [Fact]
    public void Pages_the_tree_allocates_carry_its_tree_id()
    {
        using var fixture = new TreeFixture(treeId: 42);
        for (int i = 0; i < 2000; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, i % 10 == 0 ? 5000 : 40));
        }
        fixture.Check();
        int pages = 0;
        fixture.Tree.VisitPages((pageNumber, _, _, _) =>
        {
            pages++;
            Assert.Equal(42, ReadTreeId(fixture.Store, pageNumber));
        });
        Assert.Equal(fixture.State.LeafPages + fixture.State.BranchPages + 200, pages);
    }

    private static unsafe int ReadTreeId(InMemoryPageStore store, long pageNumber) => ((Paging.PageHeader*)store.GetPage(pageNumber))->TreeId;

    [Fact]
    public void Freeing_all_pages_returns_every_page_to_the_store()
    {
        using var fixture = new TreeFixture();
        for (int i = 0; i < 5000; i++)
        {
            fixture.Tree.Put(TreeFixture.Key(i), TreeFixture.Value(i, i % 100 == 0 ? 20_000 : 30));
        }
        fixture.Check();
        Assert.True(fixture.Store.AllocatedPageCount > 20);

        fixture.Tree.FreeAllPages();

        Assert.Equal(0, fixture.Store.AllocatedPageCount);
        Assert.Equal(0, fixture.State.LeafPages + fixture.State.BranchPages + fixture.State.OverflowPages + fixture.State.Entries);
        fixture.Store.Commit();
    }
}
