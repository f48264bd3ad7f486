namespace Storage.Faults;

/// <summary>
/// One rule of the native fault seam: it hits call number <see cref="Nth"/> of <see cref="Kind"/> (1-based,
/// counted from arming) and the <see cref="Times"/> - 1 calls after it. On an O_DIRECT journal, byte counts are
/// whole 4096-byte blocks.
/// </summary>
internal readonly record struct PalFaultRule(PalFaultKind Kind, PalFaultMode Mode, long Nth, int Error, long Bytes, uint Times)
{
    /// <summary>
    /// Fails the call with <paramref name="error"/> (an errno on Linux, a Win32 error on Windows), doing nothing;
    /// <paramref name="times"/> uint.MaxValue fails every call from <paramref name="nth"/> on.
    /// </summary>
    public static PalFaultRule Fail(PalFaultKind kind, long nth, int error, uint times = 1) => new(kind, PalFaultMode.Error, nth, error, 0, times);

    /// <summary>Writes the first <paramref name="bytes"/> bytes, then fails with <paramref name="error"/>.</summary>
    public static PalFaultRule Partial(PalFaultKind kind, long nth, long bytes, int error) => new(kind, PalFaultMode.Partial, nth, error, bytes, 1);

    /// <summary>Cuts the call's first syscall to <paramref name="bytes"/> bytes; the layer continues the write.</summary>
    public static PalFaultRule Short(PalFaultKind kind, long nth, long bytes) => new(kind, PalFaultMode.Short, nth, 0, bytes, 1);
}
