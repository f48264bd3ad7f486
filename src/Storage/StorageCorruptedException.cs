namespace Storage;

/// <summary>A file of the environment holds data that fails validation: a bad checksum, a page that
/// says it is another page, an impossible structure, or an invalid journal entry followed by valid ones.</summary>
public sealed class StorageCorruptedException : StorageException
{
    /// <summary>Creates the exception.</summary>
    public StorageCorruptedException(string message, string? filePath = null, long pageNumber = -1, long offsetBytes = -1, Exception? innerException = null)
        : base(StorageErrorCode.Corrupted, Describe(message, filePath, pageNumber, offsetBytes), filePath, 0, innerException)
    {
        PageNumber = pageNumber;
        OffsetBytes = offsetBytes;
    }

    /// <summary>The damaged page, or -1.</summary>
    public long PageNumber { get; }

    /// <summary>The byte offset of the damage in <see cref="StorageException.Path"/>, or -1.</summary>
    public long OffsetBytes { get; }

    private static string Describe(string message, string? filePath, long pageNumber, long offsetBytes)
    {
        var where = filePath is null ? "" : $" [file {filePath}";
        if (filePath is not null)
        {
            if (pageNumber >= 0) where += $", page {pageNumber}";
            if (offsetBytes >= 0) where += $", offset {offsetBytes}";
            where += "]";
        }
        else if (pageNumber >= 0)
        {
            where = $" [page {pageNumber}]";
        }
        return message + where;
    }
}
