using Storage.Commit;
using Storage.Journal;
using Storage.Paging;

namespace Storage.Fuzz.Targets;

/// <summary>
/// <c>page-diff</c>: the input is an encoded diff. It is applied onto a zero page (a new page's base) and onto a
/// patterned page (an older version), each in memory with inaccessible pages on both sides. When an apply
/// succeeds, the result is encoded against its base again and applied to a fresh copy of the base, which must
/// give the same page: what <see cref="PageDiff.Encode"/> writes, <see cref="PageDiff.Apply"/> must read back.
/// </summary>
internal static unsafe class PageDiffTarget
{
    public static void Run(byte[] input)
    {
        FuzzContract.Step(() => ApplyAndRoundTrip(input, pattern: false));
        FuzzContract.Step(() => ApplyAndRoundTrip(input, pattern: true));
    }

    private static void ApplyAndRoundTrip(byte[] diff, bool pattern)
    {
        using var baseline = new GuardedPage();
        Fill(baseline, pattern);
        using var page = new GuardedPage();
        Fill(page, pattern);
        PageDiff.Apply(page.Pointer, diff, "fuzz.journal", 2, 0);

        var encoded = new byte[2 * PageLayout.PageSizeBytes];
        var size = PageDiff.Encode(page.Pointer, baseline.Pointer, encoded, encoded.Length);
        if (size < 0) throw new FuzzInvariantException("a page's diff against its base does not fit two pages");
        using var copy = new GuardedPage();
        Fill(copy, pattern);
        PageDiff.Apply(copy.Pointer, encoded.AsSpan(0, size), "fuzz.journal", 2, 0);
        if (!copy.Span.SequenceEqual(page.Span))
        {
            var at = copy.Span.CommonPrefixLength(page.Span);
            throw new FuzzInvariantException($"encode then apply does not give the page back (first difference at byte {at})");
        }
    }

    private static void Fill(GuardedPage page, bool pattern)
    {
        var span = page.Span;
        if (!pattern)
        {
            span.Clear();
            return;
        }
        for (var i = 0; i < span.Length; i++) span[i] = (byte)(i * 31 + (i >> 8));
    }
}
