using Microsoft.Win32.SafeHandles;
using Storage.Trees;

namespace Storage.Inspection;

/// <summary>The snapshot as the checker's source: its state, the journal's rebuilt pages, else positional reads of the data file.</summary>
public sealed partial class EnvironmentSnapshot
{
    TreeHeader ICheckSource.RootTree => RootTree;

    long ICheckSource.PagesEndOutsideFile => JournalPagesEnd;

    SafeFileHandle? ICheckSource.HoleProbe => _handle;

    /// <remarks>The journal rebuilds a run whole, and maps every page of it, so a page of a run is read like any other.</remarks>
    bool ICheckSource.TryReadRunPage(long firstPage, long index, Span<byte> destination, out string? problem) =>
        TryReadPage(firstPage + index, destination, out problem);

    bool ICheckSource.IsHeldOutsideDataFile(long pageNumber, long runFirstPage) => IsFromJournal(pageNumber);
}
