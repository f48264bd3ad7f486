namespace Storage.Paging;

/// <summary>
/// The pages a B+Tree works on, as one transaction sees them. Implemented by the transactions
/// (scratch copy-on-write over the memory-mapped data file) and by an in-memory store in tests.
/// </summary>
/// <remarks>
/// Pointers stay valid until the transaction ends. A pointer from <see cref="GetPage"/> is the
/// version the transaction saw before it changed the page; after <see cref="ModifyPage(long)"/> use the
/// pointer it returned (repeated calls return the same one). Pages are <see cref="PageLayout.PageSizeBytes"/> long.
/// </remarks>
internal unsafe interface ITreePageStore
{
    bool IsWritable { get; }

    /// <summary>Read view of a page (this transaction's own copy if it changed it). Throws <see cref="StorageCorruptedException"/> for a page number outside the file.</summary>
    byte* GetPage(long pageNumber);

    /// <summary>Read view of a contiguous run of pages (overflow values).</summary>
    byte* GetPages(long firstPageNumber, int count);

    /// <summary>A writable copy of the page, private to this transaction.</summary>
    byte* ModifyPage(long pageNumber);

    /// <summary>
    /// As <see cref="ModifyPage(long)"/>, for a caller that records every byte range it writes into
    /// <paramref name="writtenLines"/> (see <see cref="Storage.Commit.WrittenLines"/>); null when the store does not track them.
    /// </summary>
    byte* ModifyPage(long pageNumber, out ulong* writtenLines)
    {
        writtenLines = null;
        return ModifyPage(pageNumber);
    }

    /// <summary>
    /// As <see cref="ModifyPage(long, out ulong*)"/>, for a caller that holds <paramref name="current"/>, what
    /// <see cref="GetPage"/> returned for the page in this transaction: the copy is made from it without looking the
    /// page up again.
    /// </summary>
    byte* ModifyPage(long pageNumber, byte* current, out ulong* writtenLines) => ModifyPage(pageNumber, out writtenLines);

    /// <summary>Allocates a contiguous run of zeroed, writable pages near <paramref name="nearPageNumber"/> when possible (pass -1 for no preference).</summary>
    long AllocatePages(int count, long nearPageNumber, out byte* firstPage);

    /// <summary>
    /// Allocates the lowest free run of <paramref name="count"/> pages that ends at or below <paramref name="ceiling"/>, or
    /// returns -1 (compaction moves pages down with it). Stores without free-space maps cannot.
    /// </summary>
    long AllocatePagesBelow(int count, long ceiling, out byte* firstPage)
    {
        firstPage = null;
        return -1;
    }

    /// <summary>Gives a run of pages back to the free space.</summary>
    void FreePages(long firstPageNumber, int count);

    /// <summary>
    /// Starts reading runs of pages that are about to be used, without waiting (advisory). May reorder
    /// <paramref name="runs"/>. Stores whose pages are always in memory do nothing.
    /// </summary>
    void Prefetch(Span<PageRun> runs)
    {
    }

    /// <summary>
    /// As <see cref="Prefetch"/>, for pages a scan is about to reach; stores may leave out pages they know are in
    /// memory, so that a scan over warm pages costs nothing.
    /// </summary>
    void ReadAhead(Span<PageRun> runs) => Prefetch(runs);

    /// <summary>
    /// The page's address if it can be had without reading the page or doing any I/O, else null: for prefetching a
    /// page about to be read (a prefetch instruction never faults, so a page the kernel has not mapped yet is only
    /// skipped). <paramref name="firstRead"/> says that reading it will first checksum all of it. The pointer is only
    /// a hint; reads go through <see cref="GetPage"/>.
    /// </summary>
    byte* PeekPage(long pageNumber, out bool firstRead)
    {
        firstRead = false;
        return null;
    }

    /// <summary>Working arrays shared by the trees changing pages of this store, or null (each tree makes its own).</summary>
    Trees.TreeWorkspace? Workspace => null;
}
