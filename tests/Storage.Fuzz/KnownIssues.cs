using System.Diagnostics;

namespace Storage.Fuzz;

/// <summary>
/// The known open findings. Unless <c>STORAGE_FUZZ_STRICT=1</c>, an untyped exception that matches one of them (its
/// type and the type of its innermost library frame) counts as <see cref="FuzzOutcome.KnownIssue"/> instead of a crash: afl-fuzz goes on
/// looking for new problems instead of piling up variants of a known one, and the time-boxed CI run fails only for
/// new findings. Remove an entry when the library fixes it (its reproducers then move to findings/&lt;target&gt;/).
/// </summary>
internal static class KnownIssues
{
    public static readonly bool Strict = Environment.GetEnvironmentVariable("STORAGE_FUZZ_STRICT") == "1";

    public static IReadOnlyList<KnownIssue> All { get; } = [];


    public static KnownIssue? Match(Exception e)
    {
        var type = InnermostLibraryType(e);
        if (type is null) return null;
        return All.FirstOrDefault(issue => issue.ExceptionTypes.Contains(e.GetType()) && issue.Types.Contains(type));
    }

    /// <summary>The type of the innermost frame in the library or the inspection tool (not the runtime, not this harness).</summary>
    public static string? InnermostLibraryType(Exception e)
    {
        foreach (var frame in new StackTrace(e, fNeedFileInfo: false).GetFrames())
        {
            var method = frame.GetMethod();
            var type = method?.DeclaringType;
            if (type?.FullName is not { } name) continue;
            // Lambdas and local functions live in nested compiler-generated types; name them by their outer type.
            while (type.DeclaringType is not null && name.Contains('+', StringComparison.Ordinal))
            {
                type = type.DeclaringType;
                name = type.FullName!;
            }
            if (!name.StartsWith("Storage.", StringComparison.Ordinal) || name.StartsWith("Storage.Fuzz.", StringComparison.Ordinal)) continue;
            return name;
        }
        return null;
    }
}
