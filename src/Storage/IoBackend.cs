namespace Storage;

/// <summary>Which I/O backend an environment writes through (<see cref="StorageOptions.IoBackend"/>).</summary>
public enum IoBackend
{
    /// <summary>
    /// The native platform layer when it loads (io_uring on Linux, overlapped writes on Windows), otherwise
    /// the managed backend. The environment variable <c>STORAGE_IO_BACKEND</c> (<c>native</c> or
    /// <c>managed</c>) overrides the choice for the whole process.
    /// </summary>
    Auto = 0,

    /// <summary>The native platform layer; opening fails with <see cref="StorageErrorCode.PlatformUnavailable"/> when it cannot be loaded.</summary>
    Native,

    /// <summary>.NET's own file APIs (RandomAccess vectored writes), whatever the platform offers.</summary>
    Managed,
}
