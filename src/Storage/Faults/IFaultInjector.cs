using Storage.Platform;

namespace Storage.Faults;

/// <summary>
/// Test seam of the managed I/O calls: called before each write, sync and resize the engine issues through
/// <see cref="FileIo"/> (on both backends) and before the native backend's ring and journal calls. An
/// implementation throws <see cref="IOException"/> to make that call fail as the operating system would, or
/// <see cref="PartialWriteException"/> to have a write put its first bytes on disk and then fail.
/// </summary>
/// <remarks>
/// There is no short-write fault here: RandomAccess loops over short writes itself, so a short write is not
/// something the managed backend can get wrong. The native layer's own seam (<see cref="PalFaults"/>) has short
/// writes, and partial writes of ring runs and journal entries, because there the loops are the layer's.
/// The <c>After*</c> members see every change the engine made to its files once it succeeded, with the data
/// written, so a test can record them and rebuild what a power cut at any point could leave on disk. They do
/// nothing unless a test implements them. A sync is reported by <see cref="BeforeSync"/> (for files and for
/// directories), before it is issued: a recorder that treats it as done then is conservative, not wrong.
/// </remarks>
internal interface IFaultInjector
{
    void BeforeWrite(string path, long offsetBytes, long lengthBytes);

    void BeforeSync(string path);

    /// <summary>Before a file's length is changed by a caller that passes the injector (the data file growing).</summary>
    void BeforeResize(string path, long lengthBytes)
    {
    }

    /// <summary>Bytes reached the file at <paramref name="offsetBytes"/>; <paramref name="durable"/> for writes on an O_DSYNC handle.</summary>
    void AfterWrite(string path, long offsetBytes, ReadOnlySpan<byte> data, bool durable)
    {
    }

    /// <summary>The file was created (empty) or its length set.</summary>
    void AfterSetLength(string path, long lengthBytes)
    {
    }

    void AfterRename(string fromPath, string toPath)
    {
    }

    void AfterDelete(string path)
    {
    }

    void AfterCreateDirectory(string path)
    {
    }
}
