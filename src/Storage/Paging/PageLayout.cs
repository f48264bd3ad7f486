namespace Storage.Paging;

/// <summary>Fixed sizes of the on-disk page format.</summary>
internal static class PageLayout
{
    public const int PageSizeBytes = 8192;
    public const int PageSizeShift = 13;

    /// <summary>Every page (and the first page of an overflow run) starts with a <see cref="PageHeader"/>.</summary>
    public const int HeaderSizeBytes = 32;

    /// <summary>Pages 0 and 1 are the two alternating file headers.</summary>
    public const long FirstHeaderPage = 0;
    public const long SecondHeaderPage = 1;

    public static long PagesForOverflow(long valueSizeBytes) =>
        (HeaderSizeBytes + valueSizeBytes + PageSizeBytes - 1) / PageSizeBytes;
}
