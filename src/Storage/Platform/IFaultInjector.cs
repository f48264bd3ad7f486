namespace Storage.Platform;

/// <summary>
/// Test seam: called before each write and sync the engine issues. An implementation throws
/// <see cref="IOException"/> to make that call fail as the operating system would.
/// </summary>
/// <remarks>
/// The <c>After*</c> members see every change the engine made to its files once it succeeded, with the data
/// written, so a test can record them and rebuild what a power cut at any point could leave on disk. They do
/// nothing unless a test implements them. A sync is reported by <see cref="BeforeSync"/> (for files and for
/// directories), before it is issued: a recorder that treats it as done then is conservative, not wrong.
/// </remarks>
internal interface IFaultInjector
{
    void BeforeWrite(string path, long offsetBytes, long lengthBytes);

    void BeforeSync(string path);

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
