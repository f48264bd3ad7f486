using Storage.Paging;

namespace Storage.Allocation;

/// <summary>
/// Where the free-space bitmaps live. The file is cut in regions of 2^20 pages (8 GiB); each region
/// starts with two reserved pages (the file headers, in region 0) and 32 bitmap pages, each holding
/// one bit per page (1 = free) for 32,768 pages. Fixed places mean allocating never needs the
/// allocator, and a region leaves room for the largest value as one contiguous run.
/// </summary>
internal static class FreeSpaceLayout
{
    public const int BitmapOffsetBytes = 64;
    public const int BitsPerBitmapPage = 32768;
    public const int BitmapBytes = BitsPerBitmapPage / 8;
    public const int BitmapPagesPerRegion = 32;
    public const long PagesPerRegion = (long)BitsPerBitmapPage * BitmapPagesPerRegion;
    public const int ReservedPagesPerRegion = 2 + BitmapPagesPerRegion;

    /// <summary>The allocation policy looks at free space in sections of this many pages.</summary>
    public const int PagesPerSection = 2048;
    public const int SectionsPerBitmapPage = BitsPerBitmapPage / PagesPerSection;

    public static long RegionOf(long pageNumber) => pageNumber / PagesPerRegion;

    public static long RegionStart(long region) => region * PagesPerRegion;

    public static long FirstUsablePage(long region) => RegionStart(region) + ReservedPagesPerRegion;

    public static long BitmapPageFor(long pageNumber)
    {
        var region = RegionOf(pageNumber);
        var index = (pageNumber - RegionStart(region)) / BitsPerBitmapPage;
        return RegionStart(region) + 2 + index;
    }

    public static int BitIndex(long pageNumber) => (int)(pageNumber % BitsPerBitmapPage);

    public static bool IsReserved(long pageNumber) => pageNumber - RegionStart(RegionOf(pageNumber)) < ReservedPagesPerRegion;

    public static long FirstPageOfBitmap(long bitmapPage)
    {
        var region = RegionOf(bitmapPage);
        return RegionStart(region) + (bitmapPage - RegionStart(region) - 2) * BitsPerBitmapPage;
    }

    public static bool IsBitmapPage(long pageNumber)
    {
        var offset = pageNumber - RegionStart(RegionOf(pageNumber));
        return offset >= 2 && offset < ReservedPagesPerRegion;
    }

    public static unsafe void InitializeBitmapPage(byte* page, long pageNumber)
    {
        new Span<byte>(page, PageLayout.PageSizeBytes).Clear();
        var header = (PageHeader*)page;
        header->PageNumber = pageNumber;
        header->Flags = PageFlags.FreeSpaceBitmap;
    }
}
