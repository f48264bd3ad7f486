using System.Runtime.InteropServices;

namespace Storage.Platform;

/// <summary>A growable block of 4 KiB-aligned native memory (O_DIRECT needs aligned buffers), reused across transactions.</summary>
internal sealed unsafe class AlignedBuffer : IDisposable
{
    public const int Alignment = 4096;

    public AlignedBuffer(long initialCapacityBytes)
    {
        Capacity = AlignUp(Math.Max(initialCapacityBytes, Alignment));
        Pointer = (byte*)NativeMemory.AlignedAlloc((nuint)Capacity, Alignment);
    }

    public byte* Pointer { get; private set; }

    public long Capacity { get; private set; }

    /// <summary>Grows to at least <paramref name="capacityBytes"/>, keeping the first <paramref name="preserveBytes"/>.</summary>
    public void EnsureCapacity(long capacityBytes, long preserveBytes)
    {
        if (capacityBytes <= Capacity) return;
        var next = AlignUp(Math.Max(capacityBytes, Capacity * 2));
        var pointer = (byte*)NativeMemory.AlignedAlloc((nuint)next, Alignment);
        Buffer.MemoryCopy(Pointer, pointer, next, preserveBytes);
        NativeMemory.AlignedFree(Pointer);
        Pointer = pointer;
        Capacity = next;
    }

    /// <summary>Gives memory back after an unusually large transaction.</summary>
    public void ShrinkTo(long capacityBytes)
    {
        capacityBytes = AlignUp(capacityBytes);
        if (Capacity <= capacityBytes) return;
        NativeMemory.AlignedFree(Pointer);
        Pointer = (byte*)NativeMemory.AlignedAlloc((nuint)capacityBytes, Alignment);
        Capacity = capacityBytes;
    }

    public static long AlignUp(long value) => (value + Alignment - 1) & ~(long)(Alignment - 1);

    public void Dispose()
    {
        if (Pointer == null) return;
        NativeMemory.AlignedFree(Pointer);
        Pointer = null;
    }
}
