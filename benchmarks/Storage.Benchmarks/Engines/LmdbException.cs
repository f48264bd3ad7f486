namespace Storage.Benchmarks.Engines;

/// <summary>An LMDB call returned an error code.</summary>
internal sealed class LmdbException : Exception
{
    public LmdbException(string call, int errorCode, string message)
        : base($"{call} failed: {message} ({errorCode})")
    {
        ErrorCode = errorCode;
    }

    public int ErrorCode { get; }
}
