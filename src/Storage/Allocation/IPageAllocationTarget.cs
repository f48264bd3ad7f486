namespace Storage.Allocation;

/// <summary>The write transaction, as the allocator sees it.</summary>
internal unsafe interface IPageAllocationTarget
{
    /// <summary>The first page never allocated; the allocator moves it when it takes pages from the end of the file.</summary>
    long NextPageNumber { get; set; }

    byte* GetPage(long pageNumber);

    byte* ModifyPage(long pageNumber);

    /// <summary>Adds a page that did not exist before (zeroed, private to the transaction).</summary>
    byte* CreatePage(long pageNumber);
}
