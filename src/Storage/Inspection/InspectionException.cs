namespace Storage.Inspection;

/// <summary>
/// An environment on disk that cannot be read as asked: no directory, no data file, neither header valid, a page past
/// the end of the file, a tree that cannot be walked. The message is one line, naming what and where.
/// </summary>
public class InspectionException : Exception
{
    /// <summary>Creates the exception.</summary>
    /// <param name="message">What cannot be read, in one line.</param>
    /// <param name="innerException">The failure behind it, if any.</param>
    public InspectionException(string message, Exception? innerException = null) : base(message, innerException)
    {
    }
}
