using Storage.Platform;

namespace Storage.Faults;

/// <summary>
/// Test bindings of the native layer's fault seam (pal_fault_* in pal.h): arm rules that fail, cut short or
/// partially write the nth call of a kind, count calls per kind, disarm. The seam is process-wide: a test that
/// arms it must keep every other use of the native layer in the process out of the way.
/// </summary>
internal static unsafe class PalFaults
{
    /// <summary>Replaces the rules, zeroes the counters and arms the seam; no rules: count calls only.</summary>
    /// <exception cref="StorageException">A rule is invalid (or not supported on this platform), or the library is missing.</exception>
    public static void Arm(params ReadOnlySpan<PalFaultRule> rules)
    {
        if (rules.Length > PalNative.FaultMaxRules) throw new ArgumentOutOfRangeException(nameof(rules), rules.Length, $"At most {PalNative.FaultMaxRules} rules.");
        RequireLibrary();
        var native = stackalloc PalNative.FaultRule[Math.Max(1, rules.Length)];
        for (var i = 0; i < rules.Length; i++)
        {
            var rule = rules[i];
            if (rule.Nth < 1 || rule.Bytes < 0) throw new ArgumentOutOfRangeException(nameof(rules), rule, "Nth counts from 1 and Bytes cannot be negative.");
            native[i] = new PalNative.FaultRule
            {
                Kind = (uint)rule.Kind,
                Mode = (uint)rule.Mode,
                Nth = (ulong)rule.Nth,
                Bytes = (ulong)rule.Bytes,
                Error = rule.Error,
                Times = rule.Times,
            };
        }
        var status = PalNative.FaultArm(native, (uint)rules.Length, out var err);
        if (status != PalNative.StatusOk) throw Pal.Error(status, err, "arm the fault seam of", PalNative.Library);
    }

    /// <summary>Stops counting and failing; <see cref="Read"/> still returns what was counted.</summary>
    public static void Disarm()
    {
        RequireLibrary();
        var status = PalNative.FaultDisarm(out var err);
        if (status != PalNative.StatusOk) throw Pal.Error(status, err, "disarm the fault seam of", PalNative.Library);
    }

    public static PalFaultCounts Read()
    {
        RequireLibrary();
        var status = PalNative.FaultGetStats(out var stats, out var err);
        if (status != PalNative.StatusOk) throw Pal.Error(status, err, "read the fault seam of", PalNative.Library);
        var calls = new long[PalNative.FaultMaxKinds];
        var fired = new long[PalNative.FaultMaxKinds];
        for (var i = 0; i < PalNative.FaultMaxKinds; i++)
        {
            calls[i] = (long)stats.Calls[i];
            fired[i] = (long)stats.Fired[i];
        }
        return new PalFaultCounts(calls, fired, stats.Armed != 0);
    }

    private static void RequireLibrary()
    {
        if (!Pal.IsAvailable) throw new StorageException(StorageErrorCode.PlatformUnavailable, $"The native fault seam needs the native layer: {Pal.UnavailableReason}");
    }
}
