namespace Storage.Platform;

/// <summary>
/// Test seam: called before each write and sync the engine issues. An implementation throws
/// <see cref="IOException"/> to make that call fail as the operating system would.
/// </summary>
internal interface IFaultInjector
{
    void BeforeWrite(string path, long offsetBytes, long lengthBytes);

    void BeforeSync(string path);
}
