using System.Buffers;

namespace Storage.Platform;

/// <summary>Exposes a block of native memory as <see cref="Memory{T}"/> for vectored writes. Does not own the memory.</summary>
internal sealed unsafe class NativeMemoryManager : MemoryManager<byte>
{
    private readonly byte* _pointer;
    private readonly int _lengthBytes;

    public NativeMemoryManager(byte* pointer, int lengthBytes)
    {
        _pointer = pointer;
        _lengthBytes = lengthBytes;
    }

    public override Span<byte> GetSpan() => new(_pointer, _lengthBytes);

    public override MemoryHandle Pin(int elementIndex = 0) => new(_pointer + elementIndex);

    public override void Unpin()
    {
    }

    protected override void Dispose(bool disposing)
    {
    }
}
