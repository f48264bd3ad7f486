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

    public static IReadOnlyList<KnownIssue> All { get; } =
    [
        new("checker-next-page",
            "EnvironmentChecker sizes its per-page arrays from the snapshot's next page number, which comes from a header or journal entry and is not bounded by the file: new PageInfo[_nextPage] (EnvironmentChecker.cs:46) and new ulong[(_nextPage + 63) / 64] (EnvironmentChecker.cs:85-86) throw OverflowException or OutOfMemoryException",
            [typeof(OverflowException), typeof(OutOfMemoryException)],
            ["Storage.Inspection.EnvironmentChecker"]),
        new("recovery-next-page",
            "Recovery takes the last entry's next page number as it is and grows the data file to it before anything checks it (Recovery.WritePages -> DataFile.EnsurePageCount, Recovery.cs:128): past the address space the new mapping throws IOException (DataFileMapping.cs:25); below it the file becomes that large",
            [typeof(IOException), typeof(OutOfMemoryException)],
            ["Storage.Paging.DataFileMapping", "Storage.Paging.DataFile"]),
        new("full-run-page-count",
            "A Full page record's page count is bounded only by the entry's next page number, not by its data: the snapshot allocates one 8 KiB array per page (EnvironmentSnapshot.cs:231-233) and recovery loops over and allocates the whole run (Recovery.cs:111-115), up to 2^31-1 pages (16 TiB) for a 24-byte record",
            [typeof(OutOfMemoryException)],
            ["Storage.Inspection.EnvironmentSnapshot", "Storage.Environments.Recovery", "Storage.Paging.ScratchBuffer"]),
        new("create-tree-id-overflow",
            "The root tree header's LastTreeId comes from the file header or a journal entry unchecked; the next CreateTree narrows it with checked((int)RootState.LastTreeId) (WriteTransaction.cs:32) and throws OverflowException when it is past int.MaxValue",
            [typeof(OverflowException)],
            ["Storage.WriteTransaction", "Storage.Transaction"]),
    ];

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
