namespace Storage;

/// <summary>An operational failure of the storage engine. <see cref="ErrorCode"/> says which.</summary>
public class StorageException : Exception
{
    /// <summary>Creates the exception.</summary>
    public StorageException(StorageErrorCode errorCode, string message, Exception? innerException = null)
        : base(message, innerException)
    {
        ErrorCode = errorCode;
    }

    /// <summary>Creates the exception for a failed system call.</summary>
    public StorageException(StorageErrorCode errorCode, string message, string? path, int osError, Exception? innerException = null)
        : base(message, innerException)
    {
        ErrorCode = errorCode;
        Path = path;
        OsError = osError;
    }

    /// <summary>What went wrong.</summary>
    public StorageErrorCode ErrorCode { get; }

    /// <summary>The file involved, when there is one.</summary>
    public string? Path { get; }

    /// <summary>The operating system's error number (errno / Win32 error), or 0.</summary>
    public int OsError { get; }
}
