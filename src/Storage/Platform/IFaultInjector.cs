namespace Storage.Platform;

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
/// </remarks>
internal interface IFaultInjector
{
    void BeforeWrite(string path, long offsetBytes, long lengthBytes);

    void BeforeSync(string path);

    /// <summary>Before a file's length is changed by a caller that passes the injector (the data file growing).</summary>
    void BeforeResize(string path, long lengthBytes);
}
