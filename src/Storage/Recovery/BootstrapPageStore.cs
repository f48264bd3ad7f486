using System.Runtime.InteropServices;
using Storage.Paging;

namespace Storage.Recovery;

/// <summary>Pages of a new environment, built in memory before the data file exists: the root tree's first leaf.</summary>
internal sealed unsafe class BootstrapPageStore : ITreePageStore, IDisposable
{
    private readonly Dictionary<long, IntPtr> _pages = [];
    private long _next;

    public BootstrapPageStore(long firstPageNumber) => _next = firstPageNumber;

    public bool IsWritable => true;

    public long NextPageNumber => _next;

    public IReadOnlyDictionary<long, IntPtr> Pages => _pages;

    public byte* GetPage(long pageNumber) => _pages.TryGetValue(pageNumber, out var p) ? (byte*)p : throw new StorageCorruptedException("No such page.", pageNumber: pageNumber);

    public byte* GetPages(long firstPageNumber, int count) => GetPage(firstPageNumber);

    public byte* ModifyPage(long pageNumber) => GetPage(pageNumber);

    public long AllocatePages(int count, long nearPageNumber, out byte* firstPage)
    {
        if (count != 1) throw new InvalidOperationException("A new environment starts with single pages only.");
        var pageNumber = _next++;
        firstPage = (byte*)NativeMemory.AlignedAlloc(PageLayout.PageSizeBytes, 4096);
        new Span<byte>(firstPage, PageLayout.PageSizeBytes).Clear();
        ((PageHeader*)firstPage)->PageNumber = pageNumber;
        _pages[pageNumber] = (IntPtr)firstPage;
        return pageNumber;
    }

    public void FreePages(long firstPageNumber, int count) => throw new InvalidOperationException("A new environment frees nothing.");

    public void Dispose()
    {
        foreach (var p in _pages.Values) NativeMemory.AlignedFree((void*)p);
        _pages.Clear();
    }
}
