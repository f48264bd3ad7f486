using System.Diagnostics;
using System.IO.MemoryMappedFiles;
using Microsoft.Win32.SafeHandles;

namespace Storage.Paging;

/// <summary>
/// A read-only memory map of the data file at one size. Reference counted: the environment holds one
/// reference to the current mapping and every transaction that reads through it holds one, so growing
/// the file (which makes a new, larger mapping) never unmaps memory a reader still points into.
/// </summary>
internal sealed unsafe class DataFileMapping
{
    private readonly MemoryMappedFile _file;
    private readonly MemoryMappedViewAccessor _view;
    private int _references = 1;

    public DataFileMapping(SafeFileHandle handle, long lengthBytes)
    {
        Debug.Assert(lengthBytes > 0 && lengthBytes % PageLayout.PageSizeBytes == 0, "mappings cover whole pages");
        _file = MemoryMappedFile.CreateFromFile(handle, mapName: null, lengthBytes, MemoryMappedFileAccess.Read, HandleInheritability.None, leaveOpen: true);
        _view = _file.CreateViewAccessor(0, lengthBytes, MemoryMappedFileAccess.Read);
        byte* pointer = null;
        _view.SafeMemoryMappedViewHandle.AcquirePointer(ref pointer);
        Base = pointer + _view.PointerOffset;
        LengthBytes = lengthBytes;
        PageCount = lengthBytes >> PageLayout.PageSizeShift;
    }

    public byte* Base { get; }

    public long LengthBytes { get; }

    public long PageCount { get; }

    public byte* PagePointer(long pageNumber)
    {
        Debug.Assert(pageNumber >= 0 && pageNumber < PageCount, "callers check the page is inside the mapping");
        return Base + (pageNumber << PageLayout.PageSizeShift);
    }

    public bool TryAddReference()
    {
        while (true)
        {
            var current = Volatile.Read(ref _references);
            if (current == 0) return false;
            if (Interlocked.CompareExchange(ref _references, current + 1, current) == current) return true;
        }
    }

    public void Release()
    {
        var remaining = Interlocked.Decrement(ref _references);
        Debug.Assert(remaining >= 0, "a mapping is released once per reference");
        if (remaining != 0) return;
        _view.SafeMemoryMappedViewHandle.ReleasePointer();
        _view.Dispose();
        _file.Dispose();
    }
}
