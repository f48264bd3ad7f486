namespace Storage.Inspection;

/// <summary>One of the data file's two alternating header slots (pages 0 and 1), as read.</summary>
/// <param name="Slot">0 or 1: the page it is on.</param>
/// <param name="Header">What it holds when it is valid; else null.</param>
/// <param name="Problem">Why it is not valid (a checksum, a magic number, a short file); null when it is.</param>
public sealed record HeaderSlot(int Slot, DataFileHeader? Header, string? Problem)
{
    /// <summary>Whether the slot holds a valid header.</summary>
    public bool IsValid => Header is not null;
}
