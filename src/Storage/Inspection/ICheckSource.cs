using Microsoft.Win32.SafeHandles;
using Storage.Trees;

namespace Storage.Inspection;

/// <summary>
/// What <see cref="EnvironmentChecker"/> reads: one committed state (its last transaction, next page number and tree of
/// tree names) and that state's pages. Two sources: an <see cref="EnvironmentSnapshot"/> of a directory on disk (positional
/// reads, the journal applied in memory) and a <see cref="TransactionCheckSource"/> of an environment this process has
/// open (a read transaction's versions in the page table, else the mapped data file).
/// </summary>
/// <remarks>
/// A source never validates what it reads (the checker does, and reports what fails), and never throws for a page it
/// cannot read: it says why instead, so that the check goes on with the rest of the file.
/// </remarks>
internal interface ICheckSource
{
    /// <summary>The data file, for the locations of problems.</summary>
    string DataPath { get; }

    /// <summary>The last transaction of the state; a page written by a later one is a problem.</summary>
    long TransactionId { get; }

    /// <summary>Pages at or past this number were never allocated in the state.</summary>
    long NextPageNumber { get; }

    /// <summary>The state's tree of tree names.</summary>
    TreeHeader RootTree { get; }

    /// <summary>Whole pages in the data file.</summary>
    long FilePageCount { get; }

    /// <summary>One past the highest page the source holds outside the data file (0 when it holds none past the file's end).</summary>
    long PagesEndOutsideFile { get; }

    /// <summary>What was found while the state was read (header slots, journal), reported before the check's own problems.</summary>
    IReadOnlyList<CheckProblem> Problems { get; }

    /// <summary>
    /// A handle of the data file to find holes with (SEEK_HOLE, SEEK_DATA), whose file offset nothing else uses; null when
    /// there is none.
    /// </summary>
    SafeFileHandle? HoleProbe { get; }

    /// <summary>Reads the state's version of one page (the first page of a run: its header and first bytes) into <paramref name="destination"/>.</summary>
    bool TryReadPage(long pageNumber, Span<byte> destination, out string? problem);

    /// <summary>Reads page <paramref name="index"/> of the overflow run that starts at <paramref name="firstPage"/>, as the state has the run.</summary>
    bool TryReadRunPage(long firstPage, long index, Span<byte> destination, out string? problem);

    /// <summary>
    /// Whether the state's version of the page (of the run starting at <paramref name="runFirstPage"/>, which is the page
    /// itself when it starts no run) is held outside the data file, so that what the file holds there does not matter.
    /// </summary>
    bool IsHeldOutsideDataFile(long pageNumber, long runFirstPage);
}
