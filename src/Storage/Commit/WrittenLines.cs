using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Runtime.Intrinsics.X86;
using Storage.Paging;

namespace Storage.Commit;

/// <summary>
/// Which 64-byte lines of a changed page its writes touched: 128 bits a page, set by the tree's page operations as
/// they write (<see cref="Mark"/>), so that the commit compares only those lines with the page's previous version
/// instead of all 8 KiB of both. A page changed by code that does not record its writes has every bit set.
/// </summary>
/// <remarks>
/// The maps live in chunks that never move, so a pointer to one stays valid while the transaction adds pages. Write
/// transactions run one at a time and a commit has encoded its pages before the next one begins, so the environment
/// keeps one set and starts it over at each write transaction.
/// </remarks>
internal sealed unsafe class WrittenLines : IDisposable
{
    public const int LineShift = 6;
    public const int LineSizeBytes = 1 << LineShift;
    public const int LinesPerPage = PageLayout.PageSizeBytes / LineSizeBytes;
    private const int WordsPerMap = LinesPerPage / 64;
    private const int MapsPerChunk = 512;

    private readonly List<IntPtr> _chunks = [];
    private int _used;

    /// <summary>A cleared map for one more page of the current write transaction.</summary>
    public ulong* Rent()
    {
        var chunk = _used / MapsPerChunk;
        if (chunk == _chunks.Count) _chunks.Add((IntPtr)NativeMemory.Alloc(MapsPerChunk * WordsPerMap * sizeof(ulong)));
        var map = (ulong*)_chunks[chunk] + (_used % MapsPerChunk) * WordsPerMap;
        _used++;
        map[0] = 0;
        map[1] = 0;
        return map;
    }

    /// <summary>Hands every map out again (a new write transaction begins).</summary>
    public void Reset() => _used = 0;

    /// <summary>Records that bytes [<paramref name="offset"/>, <paramref name="offset"/> + <paramref name="length"/>) of the page changed.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static void Mark(ulong* map, int offset, int length)
    {
        if (length <= 0) return;
        var first = offset >> LineShift;
        var last = (offset + length - 1) >> LineShift;
        if ((first >> 6) == (last >> 6))
        {
            map[first >> 6] |= BitsFrom(first & 63, last & 63);
            return;
        }
        map[0] |= BitsFrom(first, 63);
        map[1] |= BitsFrom(0, last & 63);
    }

    /// <summary>Records that the whole page may have changed.</summary>
    public static void MarkAll(ulong* map)
    {
        map[0] = ulong.MaxValue;
        map[1] = ulong.MaxValue;
    }

    /// <summary>
    /// The next stretch of marked lines at or after line <paramref name="line"/>, as byte offsets [start, end); false when none is left.
    /// </summary>
    public static bool NextStretch(ulong* map, int line, out int startBytes, out int endBytes)
    {
        var start = NextLine(map, line, marked: true);
        if (start >= LinesPerPage)
        {
            startBytes = endBytes = PageLayout.PageSizeBytes;
            return false;
        }
        var end = NextLine(map, start, marked: false);
        startBytes = start << LineShift;
        endBytes = end << LineShift;
        return true;
    }

    /// <summary>The first line at or after <paramref name="line"/> whose bit is <paramref name="marked"/>, or <see cref="LinesPerPage"/>.</summary>
    private static int NextLine(ulong* map, int line, bool marked)
    {
        while (line < LinesPerPage)
        {
            var word = marked ? map[line >> 6] : ~map[line >> 6];
            word &= ulong.MaxValue << (line & 63);
            if (word != 0) return (line & ~63) + BitOperations.TrailingZeroCount(word);
            line = (line & ~63) + 64;
        }
        return LinesPerPage;
    }

    /// <summary>
    /// Asks for the marked lines of a page and of its previous version to be brought into the cache, so that the diffs
    /// of many pages wait for memory together instead of one line after another. Does nothing for a page marked whole.
    /// </summary>
    public static void Prefetch(ulong* map, byte* current, byte* baseline)
    {
        if (!Sse.IsSupported || (map[0] == ulong.MaxValue && map[1] == ulong.MaxValue)) return;
        for (var w = 0; w < WordsPerMap; w++)
        {
            for (var bits = map[w]; bits != 0; bits &= bits - 1)
            {
                var offset = ((w << 6) + BitOperations.TrailingZeroCount(bits)) << LineShift;
                Sse.Prefetch0(current + offset);
                Sse.Prefetch0(baseline + offset);
            }
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static ulong BitsFrom(int low, int high) => (ulong.MaxValue >> (63 - high)) & (ulong.MaxValue << low);

    public void Dispose()
    {
        foreach (var chunk in _chunks) NativeMemory.Free((void*)chunk);
        _chunks.Clear();
        _used = 0;
    }
}
