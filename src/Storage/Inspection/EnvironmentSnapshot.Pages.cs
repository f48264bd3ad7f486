using Microsoft.Win32.SafeHandles;
using Storage.Paging;

namespace Storage.Inspection;

/// <summary>Pages of the snapshot: raw, and decoded.</summary>
public sealed partial class EnvironmentSnapshot
{
    /// <summary>The data file, open for reading.</summary>
    internal SafeFileHandle DataHandle => _handle;

    /// <summary>Whether the snapshot's version of the page was rebuilt from the journal (it is not in the data file yet).</summary>
    public bool IsFromJournal(long pageNumber) => _replayed?.Contains(pageNumber) == true;

    /// <summary>
    /// Reads page <paramref name="pageNumber"/> as of the snapshot into <paramref name="destination"/> (one page): the
    /// version the journal rebuilt, else the data file's bytes, unchecked. False, with the reason, when the page is not in
    /// the file.
    /// </summary>
    /// <param name="pageNumber">The page.</param>
    /// <param name="destination">At least one page of room.</param>
    /// <param name="problem">Why the page cannot be read; null when it was.</param>
    public unsafe bool TryReadPage(long pageNumber, Span<byte> destination, out string? problem)
    {
        if (destination.Length < PageLayout.PageSizeBytes) throw new ArgumentException("The buffer must hold a page.", nameof(destination));
        if (pageNumber < 0)
        {
            problem = $"page number {pageNumber} is negative";
            return false;
        }
        var image = _replayed is null ? null : _replayed.TryGetPage(pageNumber);
        if (image is not null)
        {
            new ReadOnlySpan<byte>(image, PageLayout.PageSizeBytes).CopyTo(destination);
            problem = null;
            return true;
        }
        if (pageNumber >= FilePageCount)
        {
            if (pageNumber < NextPageNumber && Header.NextPageNumber <= FilePageCount)
            {
                // The file grows when the flusher writes; a page a live writer allocated since is only in the journal.
                destination[..PageLayout.PageSizeBytes].Clear();
                problem = null;
                return true;
            }
            problem = $"page {pageNumber} is past the end of the data file ({FilePageCount} pages)";
            return false;
        }
        try
        {
            var read = Platform.FileIo.Read(_handle, DataPath, destination[..PageLayout.PageSizeBytes], pageNumber * PageLayout.PageSizeBytes);
            if (read < PageLayout.PageSizeBytes)
            {
                problem = $"page {pageNumber} could be read only in part ({read} bytes): the file shrank";
                return false;
            }
        }
        catch (StorageException e)
        {
            problem = $"page {pageNumber} could not be read: {e.Message}";
            return false;
        }
        problem = null;
        return true;
    }

    /// <summary>Reads a page as <see cref="TryReadPage"/> does, into a new array.</summary>
    /// <exception cref="InspectionException">The page is not in the file.</exception>
    public byte[] ReadPage(long pageNumber)
    {
        var page = new byte[PageLayout.PageSizeBytes];
        if (!TryReadPage(pageNumber, page, out var problem)) throw new InspectionException(problem!);
        return page;
    }

    /// <summary>
    /// Reads a page as <see cref="TryReadPage"/> does and decodes it as far as it safely can: its header, and by its type
    /// the nodes of a tree page, the run of an overflow page, the count of a bitmap or the fields of a file header. Damage
    /// is described in <see cref="PageDescription.Problems"/>, never thrown.
    /// </summary>
    /// <exception cref="InspectionException">The page is not in the file.</exception>
    public PageDescription DescribePage(long pageNumber) => PageDecoder.Describe(ReadPage(pageNumber), pageNumber, IsFromJournal(pageNumber));
}
