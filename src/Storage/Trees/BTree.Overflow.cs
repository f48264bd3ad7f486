using Storage.Paging;

namespace Storage.Trees;

/// <summary>
/// Values larger than <see cref="TreeLimits.MaxInlineValueSizeBytes"/> live in a contiguous run of pages: the first
/// page's header says Overflow and holds the value size, the value starts right after the header and runs on
/// through the following pages (which have no headers). The leaf holds the first page number.
/// </summary>
internal sealed unsafe partial class BTree
{
    /// <summary>Allocates a run near the leaf and copies the value into it; returns the run's first page.</summary>
    private long WriteOverflow(ReadOnlySpan<byte> value, long nearPageNumber)
    {
        int pageCount = checked((int)PageLayout.PagesForOverflow(value.Length));
        long firstPageNumber = _store.AllocatePages(pageCount, nearPageNumber, out byte* run);
        var header = (PageHeader*)run;
        header->PageNumber = firstPageNumber;
        header->Flags = PageFlags.Overflow;
        header->OverflowSizeBytes = value.Length;
        header->TreeId = _state.TreeId;
        value.CopyTo(new Span<byte>(run + PageLayout.HeaderSizeBytes, value.Length));
        _state.OverflowPages += pageCount;
        return firstPageNumber;
    }

    internal ReadOnlySpan<byte> ReadOverflow(long firstPageNumber)
    {
        int sizeBytes = ReadOverflowHeader(firstPageNumber, out int pageCount);
        byte* run = _store.GetPages(firstPageNumber, pageCount);
        return new ReadOnlySpan<byte>(run + PageLayout.HeaderSizeBytes, sizeBytes);
    }

    private void FreeOverflow(long firstPageNumber)
    {
        ReadOverflowHeader(firstPageNumber, out int pageCount);
        _store.FreePages(firstPageNumber, pageCount);
        _state.OverflowPages -= pageCount;
    }

    /// <summary>Checks the run's first page and returns the value size and the run's length in pages.</summary>
    private int ReadOverflowHeader(long firstPageNumber, out int pageCount)
    {
        if (firstPageNumber < TreeNodeLayout.FirstTreePageNumber)
        {
            TreeThrowHelper.ThrowBadOverflow(firstPageNumber, "the run starts at a file header page");
        }
        var header = (PageHeader*)_store.GetPage(firstPageNumber);
        if (header->PageNumber != firstPageNumber)
        {
            TreeThrowHelper.ThrowPageNumberMismatch(firstPageNumber, header->PageNumber);
        }
        if ((header->Flags & PageFlags.TypeMask) != PageFlags.Overflow)
        {
            TreeThrowHelper.ThrowUnexpectedPageType(firstPageNumber, header->Flags, "overflow");
        }
        if (header->TreeId != _state.TreeId)
        {
            TreeThrowHelper.ThrowWrongOwner(firstPageNumber, header->TreeId, _state.TreeId);
        }
        int sizeBytes = header->OverflowSizeBytes;
        // Only values too large for a leaf are written to runs, so anything smaller is damage.
        if (sizeBytes <= TreeLimits.MaxInlineValueSizeBytes)
        {
            TreeThrowHelper.ThrowBadOverflow(firstPageNumber, $"value size {sizeBytes} is not larger than the inline limit");
        }
        pageCount = (int)PageLayout.PagesForOverflow(sizeBytes);
        return sizeBytes;
    }
}
