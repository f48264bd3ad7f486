using System.Runtime.InteropServices;

namespace Storage.Journal;

/// <summary>How a record carries a page.</summary>
internal enum JournalRecordKind
{
    /// <summary>Runs of changed bytes applied over the page's previous version.</summary>
    Diff = 1,

    /// <summary>Runs of bytes applied over a zero page (a new page).</summary>
    DiffFromZero = 2,

    /// <summary>The leading bytes of a page run (overflow values); the rest of the run is zero.</summary>
    Full = 3,
}

/// <summary>One page (or overflow run) inside a journal entry's payload, followed by <see cref="DataSizeBytes"/> bytes.</summary>
[StructLayout(LayoutKind.Explicit, Size = SizeBytes)]
internal struct JournalRecordHeader
{
    public const int SizeBytes = 24;

    [FieldOffset(0)] public long PageNumber;
    [FieldOffset(8)] public int PageCount;
    [FieldOffset(12)] public JournalRecordKind Kind;
    [FieldOffset(16)] public long DataSizeBytes;
}
