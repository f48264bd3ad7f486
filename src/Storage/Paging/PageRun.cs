namespace Storage.Paging;

/// <summary>A contiguous run of pages: the first page's number and how many pages.</summary>
internal readonly record struct PageRun(long First, long Count) : IComparable<PageRun>
{
    public long End => First + Count;

    public int CompareTo(PageRun other) => First.CompareTo(other.First);
}
