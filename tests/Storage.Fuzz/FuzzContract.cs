using Storage.Inspect;
using Storage.Inspection;

namespace Storage.Fuzz;

/// <summary>
/// The contract every target keeps: any input is either read or refused with a typed error
/// (<see cref="StorageException"/> and its subclasses, the inspection tool's <see cref="InspectionException"/>
/// or <see cref="UsageException"/>, <see cref="ArgumentException"/> for bad arguments). Any other exception is a
/// finding; so are a crash of the process (access violation, SIGSEGV, SIGBUS) and a hang, which the runner
/// (AFL++, or the watchdog of <see cref="FuzzRunner"/>) sees instead.
/// </summary>
internal static class FuzzContract
{
    [ThreadStatic]
    private static List<string>? t_refusals;

    /// <summary>The typed errors of the steps of the current execution on this thread (what each reader refused, and why).</summary>
    public static IReadOnlyList<string> Refusals => t_refusals ?? [];

    public static bool IsTyped(Exception e) => e is StorageException or InspectionException or UsageException or ArgumentException;

    /// <summary>Runs the target; a typed error is a <see cref="FuzzOutcome.Rejected"/> outcome, anything else propagates.</summary>
    public static FuzzOutcome Execute(FuzzTarget target, byte[] input)
    {
        (t_refusals ??= []).Clear();
        try
        {
            target.Run(input);
            return FuzzOutcome.Accepted;
        }
        catch (Exception e) when (IsTyped(e))
        {
            t_refusals?.Add($"{e.GetType().Name}: {e.Message}");
            return FuzzOutcome.Rejected;
        }
        catch (Exception e) when (!KnownIssues.Strict && KnownIssues.Match(e) is { } issue)
        {
            t_refusals?.Add($"known issue {issue.Id}: {e.GetType().Name}: {e.Message}");
            return FuzzOutcome.KnownIssue;
        }
    }

    /// <summary>
    /// Runs a step the target expects may refuse the input, and goes on with the next step when it does: one
    /// refusal must not hide what the other readers do with the same bytes. Untyped exceptions propagate.
    /// </summary>
    public static void Step(Action step)
    {
        try
        {
            step();
        }
        catch (Exception e) when (IsTyped(e))
        {
            t_refusals?.Add($"{e.GetType().Name}: {e.Message}");
        }
    }
}

