using Storage.Faults;
using Storage.Platform;

namespace Storage.Tests.Support;

/// <summary>
/// The calls the fault campaign fails, named by what they do for the engine. On the native backend the first
/// five are the native layer's (<see cref="PalFaultKind"/>); the rest are managed calls on both backends.
/// </summary>
public enum CampaignCall
{
    /// <summary>A commit's durable journal write.</summary>
    JournalWrite,

    /// <summary>Writing zeros through a new journal file (native: one pre-size call; managed: each 1 MiB chunk).</summary>
    JournalPresize,

    /// <summary>The sync that ends a new journal file's pre-sizing.</summary>
    JournalSync,

    /// <summary>A run of pages written to the data file (flush, checkpoint, recovery).</summary>
    DataWrite,

    /// <summary>A data file fsync/fdatasync.</summary>
    DataSync,

    /// <summary>A file header slot (data file pages 0 and 1), including the two a new environment gets.</summary>
    HeaderWrite,

    /// <summary>An fsync of a directory after a create, rename or delete.</summary>
    DirectorySync,

    /// <summary>The data file growing.</summary>
    Resize,

    /// <summary>A page of a new environment's data file, written before it is renamed into place.</summary>
    CreateWrite,

    /// <summary>The sync of a new environment's data file before the rename.</summary>
    CreateSync,
}

/// <summary>How the campaign makes a call fail.</summary>
public enum CampaignFailure
{
    /// <summary>EIO, nothing written. For syncs: the sync fails once and later ones succeed.</summary>
    Eio,

    /// <summary>ENOSPC, nothing written.</summary>
    Enospc,

    /// <summary>The first 4096 bytes are written, then EIO.</summary>
    PartialThenEio,

    /// <summary>Everything is written, then EIO (the device wrote the data but failed the request).</summary>
    LandedThenEio,

    /// <summary>The first syscall writes only 4096 bytes and the layer must write the rest (native layer only).</summary>
    Short,
}

internal static class CampaignCalls
{
    public static readonly CampaignCall[] All = Enum.GetValues<CampaignCall>();

    /// <summary>The calls the native layer makes (and its seam fails) on the native backend.</summary>
    public static bool IsNative(CampaignCall call) => call <= CampaignCall.DataSync;

    public static PalFaultKind NativeKind(CampaignCall call) => call switch
    {
        CampaignCall.JournalWrite => PalFaultKind.JournalWrite,
        CampaignCall.JournalPresize => PalFaultKind.JournalPresize,
        CampaignCall.JournalSync => PalFaultKind.JournalSync,
        CampaignCall.DataWrite => PalFaultKind.DataWrite,
        CampaignCall.DataSync => PalFaultKind.DataSync,
        _ => throw new ArgumentOutOfRangeException(nameof(call), call, "a managed call"),
    };

    public static bool IsWrite(CampaignCall call) =>
        call is CampaignCall.JournalWrite or CampaignCall.JournalPresize or CampaignCall.DataWrite or CampaignCall.HeaderWrite or CampaignCall.CreateWrite;

    public static bool IsSync(CampaignCall call) =>
        call is CampaignCall.JournalSync or CampaignCall.DataSync or CampaignCall.DirectorySync or CampaignCall.CreateSync;

    /// <summary>The failures that make sense for a call on a backend.</summary>
    public static IEnumerable<CampaignFailure> FailuresOf(CampaignCall call, bool nativeBackend)
    {
        if (IsSync(call))
        {
            yield return CampaignFailure.Eio;
            yield break;
        }
        yield return CampaignFailure.Eio;
        yield return CampaignFailure.Enospc;
        if (!IsWrite(call)) yield break;
        yield return CampaignFailure.PartialThenEio;
        yield return CampaignFailure.LandedThenEio;
        // RandomAccess loops over short writes itself: only the native layer's loops can be tested this way.
        if (nativeBackend && IsNative(call)) yield return CampaignFailure.Short;
    }

    /// <summary>
    /// Failures that leave acknowledged data depending on something that did not reach the disk (a journal entry, or
    /// pages and headers of the data file): the environment must stop accepting writes. Not among them: the data file
    /// failing to grow, which fails only the commit that needed the space, and a page write refused for want of space,
    /// which changed nothing and is left to a later flush.
    /// </summary>
    public static bool MustPoison(CampaignCall call, CampaignFailure failure) => call switch
    {
        CampaignCall.JournalWrite or CampaignCall.DataSync or CampaignCall.HeaderWrite => true,
        CampaignCall.DataWrite => failure != CampaignFailure.Enospc,
        _ => false,
    };

    public static PalFaultRule NativeRule(CampaignCall call, CampaignFailure failure, long nth) => failure switch
    {
        CampaignFailure.Eio => PalFaultRule.Fail(NativeKind(call), nth, 5),
        CampaignFailure.Enospc => PalFaultRule.Fail(NativeKind(call), nth, 28),
        CampaignFailure.PartialThenEio => PalFaultRule.Partial(NativeKind(call), nth, 4096, 5),
        CampaignFailure.LandedThenEio => PalFaultRule.Partial(NativeKind(call), nth, long.MaxValue, 5),
        CampaignFailure.Short => PalFaultRule.Short(NativeKind(call), nth, 4096),
        _ => throw new ArgumentOutOfRangeException(nameof(failure)),
    };

    public static IOException ManagedError(CampaignFailure failure) => failure switch
    {
        CampaignFailure.Eio => ScriptedFaults.Eio(),
        CampaignFailure.Enospc => ScriptedFaults.Enospc(),
        CampaignFailure.PartialThenEio => ScriptedFaults.PartialThenEio(4096),
        CampaignFailure.LandedThenEio => ScriptedFaults.PartialThenEio(long.MaxValue),
        _ => throw new ArgumentOutOfRangeException(nameof(failure), failure, "not a managed failure"),
    };
}
