using System.Diagnostics;
using System.Runtime.InteropServices;
using Storage.Paging;
using Storage.Platform;

namespace Storage.Scratch;

/// <summary>
/// Page-aligned memory holding one page version (or one overflow run) that is not in the data file:
/// a transaction's dirty copy, then, after commit, a committed version in the page table until flushed.
/// Native (anonymous) memory: a page of the <see cref="ScratchArena"/>, or an allocation of its own for a run of pages;
/// or one page of the mapped <see cref="ScratchFile"/> when scratch spills.
/// </summary>
internal sealed unsafe class ScratchBuffer
{
    private NativeMemoryManager? _memory;

    /// <summary>Native memory of its own (runs of pages; single pages come from the arena, outside tests).</summary>
    public ScratchBuffer(int pageCount)
    {
        Debug.Assert(pageCount > 0, "a scratch buffer holds at least one page");
        PageCount = pageCount;
        Pointer = (byte*)NativeMemory.AlignedAlloc((nuint)SizeBytes, 4096);
    }

    /// <summary>A page of a scratch file's map; the file owns the memory.</summary>
    public ScratchBuffer(byte* mappedPage, ScratchFile file)
    {
        PageCount = 1;
        Pointer = mappedPage;
        File = file;
    }

    /// <summary>A page of an arena's slab; the arena owns the memory.</summary>
    public ScratchBuffer(byte* slabPage, ScratchArena arena)
    {
        PageCount = 1;
        Pointer = slabPage;
        Arena = arena;
    }

    private ScratchBuffer(byte* mappedPages, int pageCount, bool view)
    {
        PageCount = pageCount;
        Pointer = mappedPages;
        IsView = view;
    }

    /// <summary>
    /// A view of pages of the data file's map: clean pages the flusher writes back unchanged to join two runs into one
    /// write. It owns nothing; its pages carry whatever checksum the file holds.
    /// </summary>
    public static ScratchBuffer ViewOf(byte* mappedPages, int pageCount) => new(mappedPages, pageCount, view: true);

    /// <summary>Whether this is a view of the data file's map (<see cref="ViewOf"/>).</summary>
    public bool IsView { get; }

    /// <summary>The scratch file the page lives in; null for native memory.</summary>
    public ScratchFile? File { get; }

    /// <summary>The arena whose slab holds the page; null for a file page or an allocation of its own.</summary>
    public ScratchArena? Arena { get; }

    public byte* Pointer { get; private set; }

    public int PageCount { get; }

    public long SizeBytes => (long)PageCount * PageLayout.PageSizeBytes;

    /// <summary>Memory over the buffer for vectored writes; created once per buffer.</summary>
    public ReadOnlyMemory<byte> AsMemory()
    {
        Debug.Assert(SizeBytes <= int.MaxValue, "runs larger than 2 GiB are written in pieces");
        _memory ??= new NativeMemoryManager(Pointer, (int)SizeBytes);
        return _memory.Memory;
    }

    /// <summary>Frees an allocation of its own; a page of the arena or of a scratch file is only forgotten (its owner frees or unmaps it when it closes).</summary>
    public void Release()
    {
        if (Pointer == null) return;
        if (File is null && Arena is null && !IsView) NativeMemory.AlignedFree(Pointer);
        Pointer = null;
    }
}
