namespace Storage.Faults;

/// <summary>What a native fault rule does to the call it hits (PAL_FAULT_ERROR, _PARTIAL, _SHORT).</summary>
internal enum PalFaultMode : uint
{
    /// <summary>The call does nothing and fails with the rule's error. Every kind.</summary>
    Error = 1,

    /// <summary>
    /// The first <see cref="PalFaultRule.Bytes"/> bytes are written for real, then the call fails with the rule's
    /// error; a count at least the request writes everything and still fails. Write kinds, Linux only.
    /// </summary>
    Partial = 2,

    /// <summary>
    /// The call's first syscall transfers only <see cref="PalFaultRule.Bytes"/> bytes and the layer must write the
    /// rest itself; the cut always leaves something to write (a one-byte request, or a one-block O_DIRECT journal
    /// write, passes whole); zero bytes is a write without progress, reported as EIO. Write kinds, Linux only.
    /// </summary>
    Short = 3,
}
