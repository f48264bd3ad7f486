namespace Storage;

/// <summary>Where a running consistency check stands: reported now and then, and once at the end with both numbers equal.</summary>
/// <param name="PagesExamined">Pages accounted for so far.</param>
/// <param name="PagesTotal">Pages the check accounts for in all (those below the next page number).</param>
public readonly record struct CheckProgress(long PagesExamined, long PagesTotal);
