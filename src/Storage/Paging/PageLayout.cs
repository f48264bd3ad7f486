using System.Runtime.CompilerServices;
using System.Runtime.Intrinsics.X86;

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

    /// <summary>
    /// Starts loading a page's first 384 bytes (its header and, on a tree page, the slots of about 58 nodes) before the
    /// header is read: on a page not in the processor's caches they then arrive together rather than one after another.
    /// Advisory: a prefetch never faults.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static unsafe void PrefetchHead(byte* page)
    {
        if (!Sse.IsSupported) return;
        Sse.Prefetch0(page);
        Sse.Prefetch0(page + 64);
        Sse.Prefetch0(page + 128);
        Sse.Prefetch0(page + 192);
        Sse.Prefetch0(page + 256);
        Sse.Prefetch0(page + 320);
    }

    /// <summary>Bytes <see cref="PrefetchHead"/> asks for.</summary>
    public const int HeadPrefetchBytes = 384;

    /// <summary>Starts loading <paramref name="lines"/> cache lines from <paramref name="start"/>. Advisory: a prefetch never faults.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static unsafe void PrefetchLines(byte* start, int lines)
    {
        if (!Sse.IsSupported) return;
        for (var line = 0; line < lines; line++) Sse.Prefetch0(start + line * 64);
    }

    public static long PagesForOverflow(long valueSizeBytes) =>
        (HeaderSizeBytes + valueSizeBytes + PageSizeBytes - 1) / PageSizeBytes;
}
