namespace Storage.Paging;

/// <summary>
/// One bit per data-file page, read without locks and set with atomic ORs; grown (copied) as the file grows, under
/// the data file's grow lock. A bit set in the old array while it is being copied may be lost: the bitmaps kept with
/// it only save work (a page checked again, a page asked for again), so losing one costs nothing else.
/// </summary>
internal sealed class PageBitmap
{
    private ulong[] _words;

    public PageBitmap(long pageCount)
    {
        _words = new ulong[(pageCount + 63) / 64];
    }

    public bool Test(long pageNumber)
    {
        var words = Volatile.Read(ref _words);
        var word = pageNumber >> 6;
        return word < words.Length && (Volatile.Read(ref words[word]) & (1UL << (int)(pageNumber & 63))) != 0;
    }

    public void Set(long pageNumber)
    {
        var words = Volatile.Read(ref _words);
        var word = pageNumber >> 6;
        if (word < words.Length) Interlocked.Or(ref words[word], 1UL << (int)(pageNumber & 63));
    }

    /// <summary>
    /// Makes room for <paramref name="pageCount"/> pages, keeping the bits set so far: at least doubling, so that a file
    /// grown a few MiB at a time copies its bitmap now and then rather than at every growth.
    /// </summary>
    public void Grow(long pageCount)
    {
        var current = Volatile.Read(ref _words);
        var needed = (pageCount + 63) / 64;
        if (needed <= current.Length) return;
        var words = new ulong[Math.Max(needed, Math.Min(2L * current.Length, Array.MaxLength))];
        Array.Copy(current, words, current.Length);
        Volatile.Write(ref _words, words);
    }
}
