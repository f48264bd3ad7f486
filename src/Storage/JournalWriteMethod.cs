namespace Storage;

/// <summary>How the journal makes a write durable.</summary>
public enum JournalWriteMethod
{
    /// <summary>Measured: each journal file starts by trying both methods below in turn and goes on with the faster.</summary>
    Auto = 0,

    /// <summary>
    /// One write on a handle opened O_DIRECT|O_DSYNC (write-through and unbuffered on Windows), durable when it returns;
    /// O_DSYNC alone where the file system refuses O_DIRECT.
    /// </summary>
    DirectSync = 1,

    /// <summary>A buffered write into the page cache, then fdatasync (FlushFileBuffers on Windows).</summary>
    BufferedThenSync = 2,
}
