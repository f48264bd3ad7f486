using System.Buffers.Binary;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Storage.Commit;
using Storage.Inspect.Commands;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
using Storage.Recovery;
using Storage.State;

namespace Storage.Fuzz.Targets;

/// <summary>
/// <c>journal-entry</c>: the input is the contents of journal file 1. The environment id the reader expects is the
/// one the file header (or, without one, the first entry) claims, so that entries are judged on everything else. Read as given and again
/// with every entry's checksum repaired: <see cref="JournalEntryReader.TryRead"/> at every offset it leads to (and
/// every 4 KiB boundary after a refusal), with each valid entry's page records decoded and their diffs applied to a
/// page; the file's header block and the scan for later entries; <see cref="JournalReplay.Walk"/> from the first entry,
/// as recovery walks; and the inspection tool's summary.
/// </summary>
internal static unsafe class JournalEntryTarget
{
    /// <summary>Bounds the walk on a huge input; a journal file of the fuzzer's size has far fewer 4 KiB blocks.</summary>
    private const int MaxOffsets = 4096;

    public static void Run(byte[] input)
    {
        using var directory = new ScratchDirectory("journal-entry");
        var journals = directory.Combine(StorageEnvironmentNames.JournalDirectory);
        Directory.CreateDirectory(journals);
        var path = Path.Combine(journals, JournalFile.FileName(1));
        Walk(path, input);
        var repaired = input.ToArray();
        ChecksumRepair.RepairJournal(repaired);
        if (!repaired.AsSpan().SequenceEqual(input)) Walk(path, repaired);
    }

    private static void Walk(string path, byte[] contents)
    {
        File.WriteAllBytes(path, contents);
        // The file header names the environment and the first transaction; without one, the first entry's claim is used.
        var fileHeader = JournalFileHeader.TryParse(contents, out _);
        var firstEntry = JournalFileHeader.BlockBytes;
        var environmentId = fileHeader?.EnvironmentId
            ?? (contents.Length >= firstEntry + 16 ? BinaryPrimitives.ReadUInt64LittleEndian(contents.AsSpan(firstEntry + 8)) : 0);
        var firstTransaction = fileHeader?.FirstTransactionId ?? 1L;
        using var page = new GuardedPage();
        using (var reader = new JournalEntryReader(path, 1))
        {
            var offset = (long)firstEntry;
            var found = false;
            for (var step = 0; step < MaxOffsets && offset + JournalEntryHeader.SizeBytes <= reader.LengthBytes; step++)
            {
                var at = offset;
                var size = 0L;
                FuzzContract.Step(() =>
                {
                    if (!reader.TryRead(at, environmentId, out var header, out var payload, out size))
                    {
                        size = 0;
                        return;
                    }
                    if (size <= 0 || size % AlignedBuffer.Alignment != 0) throw new FuzzInvariantException($"an entry at {at} of {size} bytes is not whole 4 KiB blocks");
                    if (!found) firstTransaction = header.TransactionId;
                    found = true;
                    ReadRecords(header, payload, page, path, at);
                });
                offset += size > 0 ? size : AlignedBuffer.Alignment;
            }
            FuzzContract.Step(() =>
            {
                var later = new LaterEntries();
                reader.ScanLaterEntries(0, environmentId, firstTransaction - 1, ref later);
            });
            FuzzContract.Step(() => reader.ReadFileHeader(out _));
        }

        var synced = new FileHeader
        {
            Magic = FileHeader.ExpectedMagic,
            FormatVersion = FileHeader.CurrentFormatVersion,
            PageSizeBytes = PageLayout.PageSizeBytes,
            EnvironmentId = environmentId,
            LastSyncedTransactionId = firstTransaction - 1,
            JournalFileNumber = 1,
            JournalOffsetBytes = firstEntry,
        };
        FuzzContract.Step(() => JournalReplay.Walk([(1, path)], Path.GetDirectoryName(path)!, synced, (in JournalEntryHeader entry, ReadOnlySpan<byte> payload, string file, long offset) =>
        {
            ReadRecords(entry, payload, page, file, offset);
            return true;
        }));
        FuzzContract.Step(() => JournalsCommand.Summarize(1, path, environmentId));
    }

    /// <summary>Decodes the page records the way recovery does, applying diffs to a page; stops at the first impossible record.</summary>
    private static void ReadRecords(in JournalEntryHeader entry, ReadOnlySpan<byte> payload, GuardedPage page, string path, long entryOffset)
    {
        var position = 0;
        for (var r = 0; r < entry.RecordCount; r++)
        {
            if (position + JournalRecordHeader.SizeBytes > payload.Length) return;
            var record = Unsafe.ReadUnaligned<JournalRecordHeader>(ref MemoryMarshal.GetReference(payload[position..]));
            position += JournalRecordHeader.SizeBytes;
            if (record.DataSizeBytes < 0 || record.DataSizeBytes > payload.Length - position) return;
            var data = payload.Slice(position, (int)record.DataSizeBytes);
            position += data.Length;
            if (record.Kind is JournalRecordKind.Diff or JournalRecordKind.DiffFromZero)
            {
                page.Span.Clear();
                var captured = data.ToArray();
                FuzzContract.Step(() => PageDiff.Apply(page.Pointer, captured, path, record.PageNumber, entryOffset));
            }
        }
    }
}
