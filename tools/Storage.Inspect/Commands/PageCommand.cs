using System.Globalization;
using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Storage.Allocation;
using Storage.Inspection;
using Storage.Paging;
using Storage.Platform;
using Storage.State;
using Storage.Trees;

namespace Storage.Inspect.Commands;

/// <summary><c>page &lt;dir&gt; &lt;N&gt;</c>: one page decoded: header, nodes, keys in hex and printable form.</summary>
internal static unsafe class PageCommand
{
    public static int Run(ParsedArgs args, TextWriter output, TextWriter error)
    {
        var positional = args.Expect(2, "<dir> <N>");
        if (!long.TryParse(positional[1], NumberStyles.None, CultureInfo.InvariantCulture, out var pageNumber))
        {
            throw new UsageException($"'{positional[1]}' is not a page number");
        }
        using var snapshot = EnvironmentSnapshot.Open(positional[0]);
        if (pageNumber >= snapshot.NextPageNumber && pageNumber < snapshot.FilePageCount)
        {
            error.WriteLine($"note: page {pageNumber} is past the next page number {snapshot.NextPageNumber} (never allocated)");
        }
        var page = snapshot.ReadPage(pageNumber);
        var decoded = Decode(snapshot, page, pageNumber);
        if (args.Json)
        {
            Output.Json(output, decoded);
            return decoded.Problems.Count == 0 ? Cli.Ok : Cli.Problems;
        }
        output.WriteLine($"page {pageNumber} ({decoded.Source})");
        foreach (var (name, value) in decoded.Header) output.WriteLine($"  {name,-16} {value}");
        if (decoded.Nodes.Count > 0)
        {
            Output.Table(output, ["#", "offset", "size", "key (hex)", "key (text)", "value"],
                decoded.Nodes.Select(n => new[] { n.Index.ToString(), n.Offset.ToString(), n.Size.ToString(), n.KeyHex, n.KeyText, n.Value }));
        }
        foreach (var line in decoded.Details) output.WriteLine(line);
        foreach (var problem in decoded.Problems) output.WriteLine($"problem: {problem}");
        return decoded.Problems.Count == 0 ? Cli.Ok : Cli.Problems;
    }

    internal sealed record Node(int Index, int Offset, int Size, string KeyHex, string KeyText, string Value);

    internal sealed class DecodedPage
    {
        public long PageNumber { get; init; }
        public string Source { get; init; } = "";
        public List<KeyValuePair<string, string>> Header { get; } = [];
        public List<Node> Nodes { get; } = [];
        public List<string> Details { get; } = [];
        public List<string> Problems { get; } = [];
    }

    internal static DecodedPage Decode(EnvironmentSnapshot snapshot, byte[] bytes, long pageNumber)
    {
        var fromJournal = snapshot.IsFromJournal(pageNumber);
        var decoded = new DecodedPage { PageNumber = pageNumber, Source = fromJournal ? "from the journal, not yet in the data file" : "from the data file" };
        var header = MemoryMarshal.Read<PageHeader>(bytes);
        void H(string name, object value) => decoded.Header.Add(new(name, Convert.ToString(value, CultureInfo.InvariantCulture) ?? ""));
        H("page number", header.PageNumber);
        H("flags", header.Flags);
        H("lower", header.Lower);
        H("upper", header.Upper);
        var pageType = header.Flags & PageFlags.TypeMask;
        if (pageType is PageFlags.Leaf or PageFlags.Branch) H("key prefix", $"{header.KeyPrefixBits} bits shared by every key");
        else H("overflow size", header.OverflowSizeBytes);
        H("tree id", header.TreeId);
        fixed (byte* p = bytes)
        {
            var computed = Crc32C.ComputePage(p, PageLayout.PageSizeBytes);
            var type = header.Flags & PageFlags.TypeMask;
            var checksumState = type == PageFlags.Overflow ? "covers the whole run; see 'check'"
                : fromJournal ? "not meaningful until the page is flushed"
                : header.Checksum == computed ? "ok" : $"MISMATCH (computed {computed:x8})";
            H("checksum", $"{header.Checksum:x8} ({checksumState})");
            if (header.PageNumber != pageNumber) decoded.Problems.Add($"page says it is page {header.PageNumber}");
            else if (type != PageFlags.Overflow && !fromJournal && header.Checksum != computed && type != PageFlags.None) decoded.Problems.Add("checksum mismatch");
            switch (type)
            {
                case PageFlags.Leaf or PageFlags.Branch:
                    DecodeTreePage(p, pageNumber, decoded);
                    break;
                case PageFlags.Overflow:
                    decoded.Details.Add($"overflow run: {header.OverflowSizeBytes} value bytes in {PageLayout.PagesForOverflow(Math.Max(0, header.OverflowSizeBytes))} pages; first bytes {Hex.Preview(bytes.AsSpan(PageLayout.HeaderSizeBytes, 32))}");
                    break;
                case PageFlags.FreeSpaceBitmap:
                    var words = MemoryMarshal.Cast<byte, ulong>(bytes.AsSpan(FreeSpaceLayout.BitmapOffsetBytes, FreeSpaceLayout.BitmapBytes));
                    long free = 0;
                    foreach (var w in words) free += BitOperations.PopCount(w);
                    var first = FreeSpaceLayout.FirstPageOfBitmap(pageNumber);
                    decoded.Details.Add($"free-space bitmap for pages {first}-{first + FreeSpaceLayout.BitsPerBitmapPage - 1}: {free} marked free");
                    break;
                case PageFlags.FileHeader:
                    var slot = FileHeaderIo.TryParse(bytes, pageNumber, out var problem);
                    if (slot is { } h)
                    {
                        decoded.Details.Add($"file header: sequence {h.Sequence}, format {h.FormatVersion}, synced through tx {h.LastSyncedTransactionId}, next page {h.NextPageNumber}, journal {h.JournalFileNumber}@{h.JournalOffsetBytes}, root page {h.RootTree.RootPage}");
                    }
                    else
                    {
                        decoded.Problems.Add($"file header invalid: {problem}");
                    }
                    break;
                default:
                    decoded.Details.Add(bytes.AsSpan().IndexOfAnyExcept((byte)0) < 0 ? "all zeros (never written)" : "not a page the engine writes with a header (overflow value bytes, or free/old content)");
                    break;
            }
        }
        return decoded;
    }

    private static void DecodeTreePage(byte* p, long pageNumber, DecodedPage decoded)
    {
        try
        {
            var page = TreePage.Open(p, pageNumber);
            decoded.Details.Add($"{(page.IsLeaf ? "leaf" : "branch")}: {page.Count} nodes, {page.ContiguousFreeBytes} bytes free between slots and nodes");
            try
            {
                page.CheckKeyHeads();
            }
            catch (StorageCorruptedException e)
            {
                decoded.Problems.Add(e.Message);
            }
            for (var i = 0; i < page.Count; i++)
            {
                var offset = TreeNodeLayout.NodeOffset(p, i);
                var key = page.GetKey(i);
                string value;
                if (page.IsLeaf)
                {
                    var v = page.GetValue(i);
                    value = v.IsOverflow ? $"overflow run at page {v.OverflowPage}" : $"{v.Inline.Length} bytes {Hex.Preview(v.Inline, 16)}";
                }
                else
                {
                    value = $"child page {Unsafe.ReadUnaligned<BranchNodeHeader>(p + offset).ChildPageNumber}";
                }
                decoded.Nodes.Add(new Node(i, offset, page.GetNodeSize(i), key.IsEmpty ? "(-inf)" : Convert.ToHexString(key).ToLowerInvariant(), Hex.Printable(key), value));
            }
        }
        catch (StorageCorruptedException e)
        {
            decoded.Problems.Add(e.Message);
        }
    }
}
