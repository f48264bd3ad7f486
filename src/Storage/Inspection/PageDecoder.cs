using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Storage.Allocation;
using Storage.Paging;
using Storage.Platform;
using Storage.State;
using Storage.Trees;

namespace Storage.Inspection;

/// <summary>Decodes one page for <see cref="EnvironmentSnapshot.DescribePage"/>: never throws for damaged bytes, says what is wrong instead.</summary>
internal static unsafe class PageDecoder
{
    public static PageDescription Describe(byte[] bytes, long pageNumber, bool fromJournal)
    {
        if (bytes.Length != PageLayout.PageSizeBytes) throw new ArgumentException("The buffer must hold one page.", nameof(bytes));
        var header = MemoryMarshal.Read<PageHeader>(bytes);
        var type = header.Flags & PageFlags.TypeMask;
        var problems = new List<string>();
        uint computed;
        fixed (byte* p = bytes) computed = Crc32C.ComputePage(p, PageLayout.PageSizeBytes);
        if (header.PageNumber != pageNumber) problems.Add($"page says it is page {header.PageNumber}");
        // An overflow run's checksum covers the whole run; a page rebuilt from the journal is checked when it is rebuilt.
        else if (type != PageFlags.Overflow && !fromJournal && header.Checksum != computed && type != PageFlags.None) problems.Add("checksum mismatch");

        int? nodeCount = null;
        var freeBytes = 0;
        var nodes = new List<PageNode>();
        long bitmapFirst = 0, bitmapFree = 0;
        DataFileHeader? fileHeader = null;
        switch (type)
        {
            case PageFlags.Leaf or PageFlags.Branch:
                fixed (byte* p = bytes) DecodeTreePage(p, pageNumber, nodes, problems, ref nodeCount, ref freeBytes);
                break;
            case PageFlags.FreeSpaceBitmap:
                foreach (var word in MemoryMarshal.Cast<byte, ulong>(bytes.AsSpan(FreeSpaceLayout.BitmapOffsetBytes, FreeSpaceLayout.BitmapBytes))) bitmapFree += BitOperations.PopCount(word);
                bitmapFirst = FreeSpaceLayout.FirstPageOfBitmap(pageNumber);
                break;
            case PageFlags.FileHeader:
                if (FileHeaderIo.TryParse(bytes, pageNumber, out var problem) is { } parsed) fileHeader = DataFileHeader.From(parsed);
                else problems.Add($"file header invalid: {problem}");
                break;
        }
        return new PageDescription
        {
            PageNumber = pageNumber,
            IsFromJournal = fromJournal,
            Kind = KindOf(type),
            StoredPageNumber = header.PageNumber,
            Flags = header.Flags.ToString(),
            Lower = header.Lower,
            Upper = header.Upper,
            KeyPrefixBits = header.KeyPrefixBits,
            OverflowSizeBytes = header.OverflowSizeBytes,
            OverflowRunPages = PageLayout.PagesForOverflow(Math.Max(0, header.OverflowSizeBytes)),
            TreeId = header.TreeId,
            TransactionId = header.TransactionId,
            StoredChecksum = header.Checksum,
            ComputedChecksum = computed,
            Payload = bytes.AsMemory(PageLayout.HeaderSizeBytes),
            IsAllZeros = bytes.AsSpan().IndexOfAnyExcept((byte)0) < 0,
            NodeCount = nodeCount,
            FreeBytes = freeBytes,
            Nodes = nodes,
            BitmapFirstPage = bitmapFirst,
            BitmapPages = type == PageFlags.FreeSpaceBitmap ? FreeSpaceLayout.BitsPerBitmapPage : 0,
            BitmapFreePages = bitmapFree,
            FileHeader = fileHeader,
            Problems = problems,
        };
    }

    private static PageKind KindOf(PageFlags type) => type switch
    {
        PageFlags.Leaf => PageKind.Leaf,
        PageFlags.Branch => PageKind.Branch,
        PageFlags.Overflow => PageKind.Overflow,
        PageFlags.FreeSpaceBitmap => PageKind.FreeSpaceBitmap,
        PageFlags.FileHeader => PageKind.FileHeader,
        _ => PageKind.Unknown,
    };

    /// <summary>The nodes up to the first that does not decode; what fails goes to <paramref name="problems"/>.</summary>
    private static void DecodeTreePage(byte* p, long pageNumber, List<PageNode> nodes, List<string> problems, ref int? nodeCount, ref int freeBytes)
    {
        try
        {
            var page = TreePage.Open(p, pageNumber);
            nodeCount = page.Count;
            freeBytes = page.ContiguousFreeBytes;
            try
            {
                page.CheckKeyHeads();
            }
            catch (StorageCorruptedException e)
            {
                problems.Add(e.Message);
            }
            for (var i = 0; i < page.Count; i++)
            {
                var offset = TreeNodeLayout.NodeOffset(p, i);
                var key = page.GetKey(i).ToArray();
                byte[] value = [];
                long? overflowPage = null, childPage = null;
                if (page.IsLeaf)
                {
                    var v = page.GetValue(i);
                    if (v.IsOverflow) overflowPage = v.OverflowPage;
                    else value = v.Inline.ToArray();
                }
                else
                {
                    childPage = Unsafe.ReadUnaligned<BranchNodeHeader>(p + offset).ChildPageNumber;
                }
                nodes.Add(new PageNode(i, offset, page.GetNodeSize(i), key, value, overflowPage, childPage));
            }
        }
        catch (StorageCorruptedException e)
        {
            problems.Add(e.Message);
        }
    }
}
