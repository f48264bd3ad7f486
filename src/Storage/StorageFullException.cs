namespace Storage;

/// <summary>The disk is full, or a file reached a size limit. Nothing of the failed operation was written.</summary>
public sealed class StorageFullException : StorageException
{
    /// <summary>Creates the exception.</summary>
    public StorageFullException(string message, string? path, int osError, Exception? innerException = null)
        : base(StorageErrorCode.DiskFull, message, path, osError, innerException)
    {
    }
}
