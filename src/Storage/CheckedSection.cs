namespace Storage;

/// <summary>
/// Free space in one section of the data file (<see cref="PagesPerSection"/> pages), the unit the page allocator looks at
/// when it chooses where to put new pages.
/// </summary>
/// <param name="Section">The section's index (its first page divided by <see cref="PagesPerSection"/>).</param>
/// <param name="FirstPage">Its first page.</param>
/// <param name="Pages">Pages of it below the next page number (fewer than <see cref="PagesPerSection"/> in the last section).</param>
/// <param name="FreePages">Of those, pages marked free and not reachable.</param>
/// <param name="LargestFreeRun">The longest run of consecutive free pages in it.</param>
public sealed record CheckedSection(long Section, long FirstPage, long Pages, long FreePages, long LargestFreeRun)
{
    /// <summary>Pages in a section.</summary>
    public const int PagesPerSection = Allocation.FreeSpaceLayout.PagesPerSection;
}
