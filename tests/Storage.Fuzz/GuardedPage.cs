using System.Runtime.InteropServices;
using Storage.Paging;

namespace Storage.Fuzz;

/// <summary>
/// One engine page of native memory with an inaccessible OS page right after it (and one right before it),
/// so that a read or write past either end of the page faults at once instead of reading neighbouring heap
/// memory unnoticed. Falls back to plain native memory where mmap is not available.
/// </summary>
internal sealed unsafe partial class GuardedPage : IDisposable
{
    private const int ProtNone = 0;
    private const int ProtReadWrite = 3;
    private const int MapPrivateAnonymous = 0x02 | 0x20;
    private const int GuardBytes = 4096;

    private readonly byte* _mapping;
    private readonly nuint _mappingBytes;

    public GuardedPage()
    {
        _mappingBytes = (nuint)(GuardBytes + PageLayout.PageSizeBytes + GuardBytes);
        if (OperatingSystem.IsLinux())
        {
            var mapping = Mmap(null, _mappingBytes, ProtNone, MapPrivateAnonymous, -1, 0);
            if (mapping != (void*)-1 && Mprotect((byte*)mapping + GuardBytes, (nuint)PageLayout.PageSizeBytes, ProtReadWrite) == 0)
            {
                _mapping = (byte*)mapping;
                Pointer = _mapping + GuardBytes;
                return;
            }
            if (mapping != (void*)-1) Munmap(mapping, _mappingBytes);
        }
        Pointer = (byte*)NativeMemory.AlignedAlloc((nuint)PageLayout.PageSizeBytes, 4096);
    }

    public byte* Pointer { get; }

    public Span<byte> Span => new(Pointer, PageLayout.PageSizeBytes);

    /// <summary>Whether <paramref name="span"/> lies inside the page.</summary>
    public bool Contains(ReadOnlySpan<byte> span)
    {
        if (span.IsEmpty) return true;
        fixed (byte* start = span)
        {
            return start >= Pointer && start + span.Length <= Pointer + PageLayout.PageSizeBytes;
        }
    }

    public void Load(ReadOnlySpan<byte> bytes)
    {
        Span.Clear();
        bytes[..Math.Min(bytes.Length, PageLayout.PageSizeBytes)].CopyTo(Span);
    }

    public void Dispose()
    {
        if (_mapping is not null) Munmap(_mapping, _mappingBytes);
        else NativeMemory.AlignedFree(Pointer);
    }

    [LibraryImport("libc", EntryPoint = "mmap")]
    private static partial void* Mmap(void* address, nuint length, int protection, int flags, int fd, nint offset);

    [LibraryImport("libc", EntryPoint = "mprotect")]
    private static partial int Mprotect(void* address, nuint length, int protection);

    [LibraryImport("libc", EntryPoint = "munmap")]
    private static partial int Munmap(void* address, nuint length);
}
