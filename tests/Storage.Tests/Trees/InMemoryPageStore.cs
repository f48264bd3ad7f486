using System.Runtime.InteropServices;
using Storage.Paging;

namespace Storage.Tests.Trees;

/// <summary>
/// An <see cref="ITreePageStore"/> in native memory for tree tests, strict about the store's contract.
/// </summary>
/// <remarks>
/// <para>Copy-on-write like a write transaction: <see cref="ModifyPage"/> hands out a private copy the first time
/// in a "transaction", and <see cref="Commit"/> makes the copies current. A tree that keeps writing through an
/// older pointer loses those writes (tests see wrong data), and one that writes through a
/// <see cref="GetPage"/> pointer of an unmodified page is caught by <see cref="Commit"/>.</para>
/// <para>Pages are allocated by bump or from a free list (the nearest free page after <c>near</c>, or a free run).
/// Freeing a page that is not allocated throws (double free). Freed memory is filled with 0xDD and released at
/// the next <see cref="Commit"/>, so stale pointers read poison rather than crash. Reading a page that is not
/// allocated throws <see cref="StorageCorruptedException"/>, like a page past the end of a real file.</para>
/// </remarks>
internal sealed unsafe class InMemoryPageStore : ITreePageStore, IDisposable
{
    private const byte FreedPoison = 0xDD;

    private readonly Dictionary<long, PageMemory> _committed = new();
    private readonly Dictionary<long, PageMemory> _dirty = new();
    private readonly Dictionary<long, ulong> _hashesOfReadPages = new();
    private readonly List<PageMemory> _releaseAtCommit = new();
    private readonly SortedSet<long> _free = new();
    private readonly HashSet<Block> _liveBlocks = new();
    private readonly HashSet<long> _modified = new();
    private long _nextPageNumber = PageLayout.SecondHeaderPage + 1;
    private int _allocatedPageCount;

    public bool IsWritable => true;

    /// <summary>Pages currently allocated (tree pages and overflow runs).</summary>
    public int AllocatedPageCount => _allocatedPageCount;

    /// <summary>Pages passed to <see cref="ModifyPage"/> since the last <see cref="Commit"/>: what the journal would diff.</summary>
    public IReadOnlyCollection<long> ModifiedSinceCommit => _modified;

    public byte* GetPage(long pageNumber)
    {
        if (_dirty.TryGetValue(pageNumber, out var dirty))
        {
            return dirty.Pointer;
        }
        if (!_committed.TryGetValue(pageNumber, out var committed))
        {
            throw new StorageCorruptedException($"Page {pageNumber} is not an allocated page.", pageNumber: pageNumber);
        }
        _hashesOfReadPages.TryAdd(pageNumber, Hash(committed.Pointer));
        return committed.Pointer;
    }

    public byte* GetPages(long firstPageNumber, int count)
    {
        if (count < 1)
        {
            throw new StorageCorruptedException($"A run of {count} pages.", pageNumber: firstPageNumber);
        }
        byte* first = GetPage(firstPageNumber);
        for (int i = 1; i < count; i++)
        {
            if (GetPage(firstPageNumber + i) != first + (long)i * PageLayout.PageSizeBytes)
            {
                // A real file is one contiguous mapping; here, pages that were never allocated as one run mean the
                // tree followed a damaged reference.
                throw new StorageCorruptedException($"Pages {firstPageNumber}..{firstPageNumber + count - 1} are not one run.", pageNumber: firstPageNumber);
            }
        }
        return first;
    }

    public byte* ModifyPage(long pageNumber)
    {
        _modified.Add(pageNumber);
        if (_dirty.TryGetValue(pageNumber, out var dirty))
        {
            return dirty.Pointer;
        }
        if (!_committed.TryGetValue(pageNumber, out var committed))
        {
            throw new InvalidOperationException($"ModifyPage({pageNumber}) of a page that is not allocated.");
        }
        var copy = NewBlock(1).PageAt(0);
        Buffer.MemoryCopy(committed.Pointer, copy.Pointer, PageLayout.PageSizeBytes, PageLayout.PageSizeBytes);
        _dirty[pageNumber] = copy;
        return copy.Pointer;
    }

    public long AllocatePages(int count, long nearPageNumber, out byte* firstPage)
    {
        if (count < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(count));
        }
        long first = TakeFreeRun(count, nearPageNumber);
        var block = NewBlock(count);
        for (int i = 0; i < count; i++)
        {
            _dirty[first + i] = block.PageAt(i);
        }
        _allocatedPageCount += count;
        firstPage = block.Base;
        return first;
    }

    public void FreePages(long firstPageNumber, int count)
    {
        for (long pageNumber = firstPageNumber; pageNumber < firstPageNumber + count; pageNumber++)
        {
            bool wasDirty = _dirty.Remove(pageNumber, out var dirty);
            bool wasCommitted = _committed.Remove(pageNumber, out var committed);
            if (!wasDirty && !wasCommitted)
            {
                throw new InvalidOperationException($"Page {pageNumber} is freed but is not allocated (double free?).");
            }
            if (wasDirty)
            {
                Poison(dirty);
            }
            if (wasCommitted)
            {
                Poison(committed);
            }
            _hashesOfReadPages.Remove(pageNumber);
            _free.Add(pageNumber);
            _allocatedPageCount--;
        }
    }

    /// <summary>
    /// Ends the "transaction": checks that no committed page was written through a read pointer, then makes the
    /// private copies current and releases the memory of replaced and freed pages.
    /// </summary>
    public void Commit()
    {
        foreach (var (pageNumber, hash) in _hashesOfReadPages)
        {
            if (!_dirty.ContainsKey(pageNumber) && Hash(_committed[pageNumber].Pointer) != hash)
            {
                throw new InvalidOperationException($"Page {pageNumber} was written through a GetPage pointer, without ModifyPage.");
            }
        }
        _hashesOfReadPages.Clear();
        _modified.Clear();
        foreach (var (pageNumber, dirty) in _dirty)
        {
            if (_committed.Remove(pageNumber, out var replaced))
            {
                Release(replaced);
            }
            _committed[pageNumber] = dirty;
        }
        _dirty.Clear();
        foreach (var memory in _releaseAtCommit)
        {
            Release(memory);
        }
        _releaseAtCommit.Clear();
    }

    /// <summary>A writable pointer to a page for tests that damage pages on purpose (bypasses copy-on-write).</summary>
    public byte* RawPage(long pageNumber) => _dirty.TryGetValue(pageNumber, out var dirty) ? dirty.Pointer : _committed[pageNumber].Pointer;

    public void Dispose()
    {
        foreach (var block in _liveBlocks)
        {
            NativeMemory.AlignedFree(block.Base);
        }
        _liveBlocks.Clear();
        _committed.Clear();
        _dirty.Clear();
    }

    private long TakeFreeRun(int count, long nearPageNumber)
    {
        if (count == 1 && _free.Count > 0)
        {
            var after = _free.GetViewBetween(Math.Max(nearPageNumber, 0), long.MaxValue);
            long page = after.Count > 0 ? after.Min : _free.Min;
            _free.Remove(page);
            return page;
        }
        long runStart = -1;
        long previous = -2;
        int runLength = 0;
        foreach (long page in _free)
        {
            if (page != previous + 1)
            {
                runStart = page;
                runLength = 0;
            }
            runLength++;
            previous = page;
            if (runLength == count)
            {
                for (long p = runStart; p < runStart + count; p++)
                {
                    _free.Remove(p);
                }
                return runStart;
            }
        }
        long first = _nextPageNumber;
        _nextPageNumber += count;
        return first;
    }

    private Block NewBlock(int pageCount)
    {
        nuint sizeBytes = (nuint)pageCount * PageLayout.PageSizeBytes;
        var block = new Block((byte*)NativeMemory.AlignedAlloc(sizeBytes, PageLayout.PageSizeBytes), pageCount);
        NativeMemory.Clear(block.Base, sizeBytes);
        _liveBlocks.Add(block);
        return block;
    }

    private void Poison(PageMemory memory)
    {
        new Span<byte>(memory.Pointer, PageLayout.PageSizeBytes).Fill(FreedPoison);
        _releaseAtCommit.Add(memory);
    }

    private void Release(PageMemory memory)
    {
        if (--memory.Block.LivePages == 0)
        {
            NativeMemory.AlignedFree(memory.Block.Base);
            _liveBlocks.Remove(memory.Block);
        }
    }

    private static ulong Hash(byte* page)
    {
        var words = new ReadOnlySpan<ulong>(page, PageLayout.PageSizeBytes / sizeof(ulong));
        ulong hash = 14695981039346656037UL;
        foreach (ulong word in words)
        {
            hash = (hash ^ word) * 1099511628211UL;
        }
        return hash;
    }

    /// <summary>One native allocation of one or more contiguous pages, released when none of its pages is in use.</summary>
    private sealed class Block(byte* basePointer, int pageCount)
    {
        public byte* Base { get; } = basePointer;

        public int LivePages { get; set; } = pageCount;

        public PageMemory PageAt(int index) => new(Base + (long)index * PageLayout.PageSizeBytes, this);
    }

    private readonly record struct PageMemory(nint Address, Block Block)
    {
        public PageMemory(byte* pointer, Block block) : this((nint)pointer, block)
        {
        }

        public byte* Pointer => (byte*)Address;
    }
}
