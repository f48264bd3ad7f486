using System.Runtime.InteropServices;

namespace Storage.Benchmarks.Engines;

/// <summary>LMDB's MDB_val: a length and a pointer.</summary>
[StructLayout(LayoutKind.Sequential)]
internal unsafe struct MdbValue
{
    public nuint Size;
    public byte* Data;
}
