using Storage.Faults;

namespace Storage.Platform;

/// <summary>
/// Thrown by an <see cref="IFaultInjector"/> to make a managed write fail part-way: <see cref="FileIo"/> writes
/// the first <see cref="BytesBeforeFailure"/> bytes for real, then fails with this exception's error. A count at
/// least the write's length writes all of it and still fails, as a device can that wrote the data but failed
/// the request. The native backend's calls that only consult the injector treat it as a plain failure.
/// </summary>
internal sealed class PartialWriteException : IOException
{
    /// <param name="bytesBeforeFailure">Bytes written before the failure.</param>
    /// <param name="message">The error's text.</param>
    /// <param name="osError">The OS error it reports (errno on Unix), as an <see cref="IOException"/>'s HResult carries it.</param>
    public PartialWriteException(long bytesBeforeFailure, string message, int osError)
        : base(message, osError)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(bytesBeforeFailure);
        BytesBeforeFailure = bytesBeforeFailure;
    }

    public long BytesBeforeFailure { get; }
}
