using System.Buffers.Binary;
using System.Numerics;
using System.Runtime.InteropServices;
using Storage.Paging;
using Storage.Platform;

namespace Storage.Commit;

/// <summary>
/// Encodes a page as the runs of bytes that differ from a base version (the previous version, or a
/// zero page for new pages): <c>[ushort offset][ushort length][bytes]</c> per run. Replaying the runs
/// over the base (or over a half-written copy of it) gives the new page.
/// </summary>
internal static unsafe class PageDiff
{
    public const int RunHeaderSizeBytes = 4;

    /// <summary>Equal stretches shorter than this stay inside a run: a new run would cost its header and more.</summary>
    private const int MinGapBytes = 8;

    private const int PageSize = PageLayout.PageSizeBytes;

    private static readonly byte* s_zeroPage = (byte*)NativeMemory.AllocZeroed(PageSize);

    public static byte* ZeroPage => s_zeroPage;

    /// <summary>
    /// Writes the runs where <paramref name="current"/> differs from <paramref name="baseline"/> into
    /// <paramref name="output"/>. Returns the encoded size, or -1 when it would reach <paramref name="limitBytes"/>.
    /// With <paramref name="writtenLines"/> (see <see cref="WrittenLines"/>) only the lines marked there are compared: the
    /// rest must be equal, and the runs are then the same as a comparison of the whole page would find (runs are never
    /// closer than <see cref="MinGapBytes"/>, and an unmarked line is longer than that).
    /// </summary>
    public static int Encode(byte* current, byte* baseline, Span<byte> output, int limitBytes, ulong* writtenLines = null)
    {
        var written = 0;
        if (writtenLines == null) return EncodeRange(current, baseline, 0, PageSize, output, ref written, limitBytes) < 0 ? -1 : written;
        var position = 0;
        while (WrittenLines.NextStretch(writtenLines, position >> WrittenLines.LineShift, out var start, out var end))
        {
            position = EncodeRange(current, baseline, Math.Max(position, start), end, output, ref written, limitBytes);
            if (position < 0) return -1;
        }
        return written;
    }

    /// <summary>
    /// Appends the runs that start in [<paramref name="from"/>, <paramref name="to"/>); returns where the comparison
    /// stopped (<paramref name="to"/>, or the end of a run reaching past it), or -1 when the output would reach the limit.
    /// </summary>
    private static int EncodeRange(byte* current, byte* baseline, int from, int to, Span<byte> output, ref int written, int limitBytes)
    {
        var cur = new ReadOnlySpan<byte>(current, to);
        var old = new ReadOnlySpan<byte>(baseline, to);
        var position = from;
        while (position < to)
        {
            position += cur[position..].CommonPrefixLength(old[position..]);
            if (position >= to) break;
            var end = FindRunEnd(current, baseline, position);
            var length = end - position;
            if (written + RunHeaderSizeBytes + length >= limitBytes) return -1;
            BinaryPrimitives.WriteUInt16LittleEndian(output[written..], (ushort)position);
            BinaryPrimitives.WriteUInt16LittleEndian(output[(written + 2)..], (ushort)length);
            new ReadOnlySpan<byte>(current + position, length).CopyTo(output[(written + RunHeaderSizeBytes)..]);
            written += RunHeaderSizeBytes + length;
            position = end;
        }
        return Math.Max(position, to);
    }

    /// <summary>The end of a changed run starting at <paramref name="start"/>: the first byte followed by <see cref="MinGapBytes"/> equal ones.</summary>
    private static int FindRunEnd(byte* current, byte* baseline, int start)
    {
        var j = start;
        while (j + MinGapBytes <= PageSize)
        {
            var x = *(ulong*)(current + j) ^ *(ulong*)(baseline + j);
            if (x == 0) return j;
            // Little-endian: the highest set byte of the difference is the last changed byte of this window.
            var lastChanged = 7 - BitOperations.LeadingZeroCount(x) / 8;
            j += lastChanged + 1;
        }
        var last = j;
        for (var k = j; k < PageSize; k++)
        {
            if (current[k] != baseline[k]) last = k + 1;
        }
        return Math.Max(last, j);
    }

    /// <summary>
    /// The checksum of the page the runs of <paramref name="diff"/> make of <paramref name="baseline"/>, from the baseline's
    /// own (<paramref name="baselineChecksum"/>, which must be right) and the changed bytes alone, without reading the
    /// rest of the page; it is also written into the run that holds the checksum field (one must: the caller made every
    /// byte of the field differ). The checksum covers the page but its checksum field, and CRC(new) = CRC(old) ⊕
    /// raw(new ⊕ old), where raw(new ⊕ old) sums each run's raw CRC shifted past the bytes that follow it.
    /// </summary>
    public static uint StampChecksum(byte* diff, int diffBytes, byte* baseline, uint baselineChecksum)
    {
        var delta = 0u;
        byte* field = null;
        var i = 0;
        while (i < diffBytes)
        {
            int at = BinaryPrimitives.ReadUInt16LittleEndian(new ReadOnlySpan<byte>(diff + i, RunHeaderSizeBytes));
            int length = BinaryPrimitives.ReadUInt16LittleEndian(new ReadOnlySpan<byte>(diff + i + 2, 2));
            var data = diff + i + RunHeaderSizeBytes;
            if (at <= ChecksumField && at + length >= ChecksumFieldEnd) field = data + (ChecksumField - at);
            // The part of the run before the checksum field, and the part after it.
            delta ^= ChecksumDelta(data, baseline, at, Math.Min(at + length, ChecksumField), at);
            delta ^= ChecksumDelta(data, baseline, Math.Max(at, ChecksumFieldEnd), at + length, at);
            i += RunHeaderSizeBytes + length;
        }
        if (field == null) throw new InvalidOperationException("A page diff lacks the page's checksum field.");
        var checksum = baselineChecksum ^ delta;
        BinaryPrimitives.WriteUInt32LittleEndian(new Span<byte>(field, PageHeader.ChecksumSizeBytes), checksum);
        return checksum;
    }

    private const int ChecksumField = PageHeader.ChecksumOffset;
    private const int ChecksumFieldEnd = PageHeader.ChecksumOffset + PageHeader.ChecksumSizeBytes;

    /// <summary>The checksummed bytes: the page without its checksum field.</summary>
    private const int ChecksummedBytes = PageSize - PageHeader.ChecksumSizeBytes;

    /// <summary>raw(new ⊕ old) of page bytes [start, end), shifted past the checksummed bytes after them.</summary>
    private static uint ChecksumDelta(byte* runData, byte* baseline, int start, int end, int runStart)
    {
        if (end <= start) return 0;
        var length = end - start;
        var inMessage = start < ChecksumField ? start : start - PageHeader.ChecksumSizeBytes;
        var raw = Crc32C.RawOfXor(runData + (start - runStart), baseline + start, length);
        return Crc32C.AppendZeros(raw, ChecksummedBytes - inMessage - length);
    }

    /// <summary>Whether <paramref name="diff"/> is a sequence of runs that all lie inside a page.</summary>
    public static bool IsWellFormed(ReadOnlySpan<byte> diff)
    {
        var i = 0;
        while (i < diff.Length)
        {
            if (i + RunHeaderSizeBytes > diff.Length) return false;
            int at = BinaryPrimitives.ReadUInt16LittleEndian(diff[i..]);
            int length = BinaryPrimitives.ReadUInt16LittleEndian(diff[(i + 2)..]);
            i += RunHeaderSizeBytes;
            if (length == 0 || at + length > PageSize || i + length > diff.Length) return false;
            i += length;
        }
        return true;
    }

    /// <summary>Applies encoded runs to a page; a run outside the page is corruption.</summary>
    public static void Apply(byte* page, ReadOnlySpan<byte> diff, string filePath, long pageNumber, long offsetBytes)
    {
        var target = new Span<byte>(page, PageSize);
        var i = 0;
        while (i < diff.Length)
        {
            if (i + RunHeaderSizeBytes > diff.Length) ThrowBadDiff(filePath, pageNumber, offsetBytes);
            int at = BinaryPrimitives.ReadUInt16LittleEndian(diff[i..]);
            int length = BinaryPrimitives.ReadUInt16LittleEndian(diff[(i + 2)..]);
            i += RunHeaderSizeBytes;
            if (length == 0 || at + length > PageSize || i + length > diff.Length) ThrowBadDiff(filePath, pageNumber, offsetBytes);
            diff.Slice(i, length).CopyTo(target[at..]);
            i += length;
        }
    }

    private static void ThrowBadDiff(string filePath, long pageNumber, long offsetBytes) =>
        throw new StorageCorruptedException("A journal entry holds a page diff that does not fit the page.", filePath, pageNumber, offsetBytes);
}
