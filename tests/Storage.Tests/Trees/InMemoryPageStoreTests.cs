using Storage.Paging;

namespace Storage.Tests.Trees;

public sealed unsafe class InMemoryPageStoreTests
{
    [Fact]
    public void Freeing_a_page_twice_throws()
    {
        using var store = new InMemoryPageStore();
        long page = store.AllocatePages(1, -1, out _);
        store.FreePages(page, 1);
        Assert.Throws<InvalidOperationException>(() => store.FreePages(page, 1));
    }

    [Fact]
    public void Writing_through_a_read_pointer_is_caught_at_commit()
    {
        using var store = new InMemoryPageStore();
        long page = store.AllocatePages(1, -1, out _);
        store.Commit();
        byte* read = store.GetPage(page);
        read[100] = 42;
        Assert.Throws<InvalidOperationException>(store.Commit);
    }

    [Fact]
    public void A_modified_page_is_a_private_copy_until_commit()
    {
        using var store = new InMemoryPageStore();
        long page = store.AllocatePages(1, -1, out _);
        store.Commit();
        byte* before = store.GetPage(page);
        byte* writable = store.ModifyPage(page);
        writable[100] = 42;
        Assert.Equal(0, before[100]);
        Assert.Equal(42, store.GetPage(page)[100]);
        store.Commit();
        Assert.Equal(42, store.GetPage(page)[100]);
    }

    [Fact]
    public void Runs_are_contiguous_and_reading_an_unallocated_page_is_corruption()
    {
        using var store = new InMemoryPageStore();
        long first = store.AllocatePages(3, -1, out byte* run);
        run[2 * PageLayout.PageSizeBytes] = 9;
        Assert.Equal(9, store.GetPages(first, 3)[2 * PageLayout.PageSizeBytes]);
        Assert.Throws<StorageCorruptedException>(() => store.GetPage(first + 10));
        Assert.Equal(3, store.AllocatedPageCount);
    }
}
