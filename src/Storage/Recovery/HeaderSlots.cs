using Storage.Paging;
using Storage.State;

namespace Storage.Recovery;

/// <summary>Choosing the file header an open starts from: of the two alternating slots, the valid one with the higher sequence.</summary>
internal static class HeaderSlots
{
    /// <summary>The valid header slot with the higher sequence; <paramref name="invalidSlot"/> describes the other one when it is invalid.</summary>
    /// <exception cref="StorageCorruptedException">Neither slot is valid, or the chosen one describes an impossible environment or a truncated file.</exception>
    /// <exception cref="StorageException"><see cref="StorageErrorCode.FormatMismatch"/>: another format or page size.</exception>
    public static FileHeader ReadBest(DataFile dataFile, out string? invalidSlot)
    {
        var first = FileHeaderIo.TryRead(dataFile, 0, out var firstProblem);
        var second = FileHeaderIo.TryRead(dataFile, 1, out var secondProblem);
        FileHeader header;
        invalidSlot = null;
        if (first is null && second is null)
        {
            throw new StorageCorruptedException($"Neither file header is valid (slot 0: {firstProblem}; slot 1: {secondProblem}).", dataFile.Path, 0, 0);
        }
        else if (first is null)
        {
            header = second!.Value;
            invalidSlot = $"slot 0 ({firstProblem})";
        }
        else if (second is null)
        {
            header = first.Value;
            invalidSlot = $"slot 1 ({secondProblem})";
        }
        else
        {
            header = first.Value.Sequence >= second.Value.Sequence ? first.Value : second.Value;
        }

        if (header.FormatVersion != FileHeader.CurrentFormatVersion || header.PageSizeBytes != PageLayout.PageSizeBytes)
        {
            throw new StorageException(StorageErrorCode.FormatMismatch, $"The data file has format {header.FormatVersion} with {header.PageSizeBytes}-byte pages; this library reads format {FileHeader.CurrentFormatVersion} with {PageLayout.PageSizeBytes}-byte pages.");
        }
        var problem = StateChecks.Problem(header);
        if (problem is not null)
        {
            throw new StorageCorruptedException($"The file header (slot {header.Sequence & 1}) describes an impossible environment ({problem}).", dataFile.Path, header.Sequence & 1, (header.Sequence & 1) * PageLayout.PageSizeBytes);
        }
        if (header.NextPageNumber > dataFile.PageCount)
        {
            throw new StorageCorruptedException($"The data file holds {dataFile.PageCount} pages but its header says {header.NextPageNumber} are in use: it was truncated.", dataFile.Path, dataFile.PageCount, dataFile.PageCount * PageLayout.PageSizeBytes);
        }
        return header;
    }
}
