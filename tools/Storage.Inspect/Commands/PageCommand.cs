using System.CommandLine;
using System.Globalization;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary><c>page &lt;dir&gt; &lt;N&gt;</c>: one page decoded: header, nodes, keys in hex and printable form.</summary>
internal static class PageCommand
{
    public static Command Create()
    {
        var directory = Cli.DirectoryArgument();
        var number = new Argument<long>("N")
        {
            Description = "The page number (0 is the first page of the data file).",
            CustomParser = result => Cli.ParseNumber(result, "a page number", 0) ?? 0,
        };
        var json = Cli.JsonOption();
        var command = new Command("page", "One page decoded: its header, checksum, and its nodes with keys in hex and printable form (or what else it holds).")
        {
            directory,
            number,
            json,
        };
        command.SetAction(parse => Run(parse.GetRequiredValue(directory), parse.GetValue(number), parse.GetValue(json), parse.InvocationConfiguration.Output, parse.InvocationConfiguration.Error));
        return command;
    }

    public static int Run(string directory, long pageNumber, bool json, TextWriter output, TextWriter error)
    {
        using var snapshot = EnvironmentSnapshot.Open(directory);
        if (pageNumber >= snapshot.NextPageNumber && pageNumber < snapshot.FilePageCount)
        {
            error.WriteLine($"note: page {pageNumber} is past the next page number {snapshot.NextPageNumber} (never allocated)");
        }
        var decoded = Decode(snapshot.DescribePage(pageNumber));
        if (json)
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

    /// <summary>The description as the command prints it: header fields, node rows, details and problems, all as text.</summary>
    internal static DecodedPage Decode(PageDescription page)
    {
        var decoded = new DecodedPage { PageNumber = page.PageNumber, Source = page.IsFromJournal ? "from the journal, not yet in the data file" : "from the data file" };
        void H(string name, object value) => decoded.Header.Add(new(name, Convert.ToString(value, CultureInfo.InvariantCulture) ?? ""));
        H("page number", page.StoredPageNumber);
        H("flags", page.Flags);
        H("lower", page.Lower);
        H("upper", page.Upper);
        var isTreePage = page.Kind is PageKind.Leaf or PageKind.Branch;
        if (isTreePage) H("key prefix", $"{page.KeyPrefixBits} bits shared by every key");
        else H("overflow size", page.OverflowSizeBytes);
        H("tree id", page.TreeId);
        var checksumState = page.Kind == PageKind.Overflow ? "covers the whole run; see 'check'"
            : page.IsFromJournal ? "not meaningful until the page is flushed"
            : page.StoredChecksum == page.ComputedChecksum ? "ok" : $"MISMATCH (computed {page.ComputedChecksum:x8})";
        H("checksum", $"{page.StoredChecksum:x8} ({checksumState})");
        switch (page.Kind)
        {
            case PageKind.Leaf or PageKind.Branch:
                if (page.NodeCount is { } count) decoded.Details.Add($"{(page.Kind == PageKind.Leaf ? "leaf" : "branch")}: {count} nodes, {page.FreeBytes} bytes free between slots and nodes");
                foreach (var node in page.Nodes)
                {
                    var value = node.ChildPage is { } child ? $"child page {child}"
                        : node.OverflowPage is { } overflow ? $"overflow run at page {overflow}"
                        : $"{node.Value.Length} bytes {Hex.Preview(node.Value, 16)}";
                    decoded.Nodes.Add(new Node(node.Index, node.OffsetBytes, node.SizeBytes, node.Key.Length == 0 ? "(-inf)" : Convert.ToHexString(node.Key).ToLowerInvariant(),
                        Hex.Printable(node.Key), value));
                }
                break;
            case PageKind.Overflow:
                decoded.Details.Add($"overflow run: {page.OverflowSizeBytes} value bytes in {page.OverflowRunPages} pages; first bytes {Hex.Preview(page.Payload.Span[..32])}");
                break;
            case PageKind.FreeSpaceBitmap:
                decoded.Details.Add($"free-space bitmap for pages {page.BitmapFirstPage}-{page.BitmapFirstPage + page.BitmapPages - 1}: {page.BitmapFreePages} marked free");
                break;
            case PageKind.FileHeader:
                if (page.FileHeader is { } h)
                {
                    decoded.Details.Add($"file header: sequence {h.Sequence}, format {h.FormatVersion}, synced through tx {h.LastSyncedTransactionId}, next page {h.NextPageNumber}, journal {h.JournalFileNumber}@{h.JournalOffsetBytes}, root page {h.RootPage}");
                }
                break;
            default:
                decoded.Details.Add(page.IsAllZeros ? "all zeros (never written)" : "not a page the engine writes with a header (overflow value bytes, or free/old content)");
                break;
        }
        decoded.Problems.AddRange(page.Problems);
        return decoded;
    }
}
