using System.Runtime.InteropServices;
using Storage.Journal;
using Storage.Platform;

namespace Storage.Inspection;

/// <summary>Reads one journal file on its own for <see cref="EnvironmentSnapshot.SummarizeJournalFile"/>.</summary>
internal static class JournalFileScanner
{
    /// <summary>The file's header, the run of valid entries from the first block after the header, and what ends it.</summary>
    public static JournalFileSummary Summarize(string path, long number, ulong environmentId)
    {
        using var reader = new JournalEntryReader(path, number);
        var fileHeader = reader.ReadFileHeader(out var headerProblem);
        int entries = 0, compressed = 0, others = 0;
        long first = -1, last = -1, stored = 0, uncompressed = 0, offset = JournalFileHeader.BlockBytes;
        long nextFile = -1, nextTransaction = -1;
        var end = JournalFileEnd.EndOfEntries;
        var later = new LaterEntries();
        while (offset + JournalEntryHeader.SizeBytes <= reader.LengthBytes)
        {
            bool valid;
            JournalEntryHeader header;
            long size;
            try
            {
                valid = reader.TryRead(offset, environmentId, out header, out _, out size);
            }
            catch (StorageCorruptedException)
            {
                valid = false;
                header = default;
                size = 0;
            }
            if (valid && (last < 0 || header.TransactionId == last + 1))
            {
                entries++;
                if (first < 0) first = header.TransactionId;
                last = header.TransactionId;
                stored += header.PayloadSizeBytes;
                uncompressed += header.UncompressedSizeBytes;
                if (header.IsCompressed) compressed++;
                offset += size;
                continue;
            }
            if (fileHeader is { IsShared: true })
            {
                if (reader.TryReadForeign(offset, environmentId, out _, out var foreignSize))
                {
                    others++; // an entry of another member of the group
                    offset += foreignSize;
                    continue;
                }
                if (JournalGroupEndMarker.TryFind(reader.ReadBlock(offset), environmentId, number) is { } record)
                {
                    (end, nextFile, nextTransaction) = (JournalFileEnd.ContinuesInNextFile, record.NextFileNumber, record.NextTransactionId);
                    break;
                }
            }
            var block = reader.ReadBlockStart(offset);
            if (JournalEndMarker.TryParse(block, environmentId, number) is { } marker)
            {
                (end, nextFile, nextTransaction) = (JournalFileEnd.ContinuesInNextFile, marker.NextFileNumber, marker.NextTransactionId);
                break;
            }
            if (!block.ContainsAnyExcept((byte)0)) break; // pre-written zeros: the end of what was used
            var raw = MemoryMarshal.Read<JournalEntryHeader>(block);
            if (valid || (raw.Marker == JournalEntryHeader.ExpectedMarker && raw.EnvironmentId == environmentId && raw.TransactionId <= last))
            {
                end = JournalFileEnd.StaleEntriesFollow;
                break;
            }
            reader.ScanLaterEntries(offset + AlignedBuffer.Alignment, environmentId, last < 0 ? 0 : last, ref later);
            if (later.Count == 0 && fileHeader is { IsRecycled: true })
            {
                end = JournalFileEnd.StaleBytesFollow;
                break;
            }
            end = later.Count > 0 ? JournalFileEnd.Damaged : JournalFileEnd.TornTail;
            break;
        }
        var damaged = end == JournalFileEnd.Damaged;
        return new JournalFileSummary
        {
            Number = number,
            Path = path,
            LengthBytes = reader.LengthBytes,
            LinkCount = Platform.Posix.LinkCount(path) is { } links ? (int)links : -1,
            HeaderProblem = fileHeader is null ? headerProblem : null,
            HeaderEnvironmentId = fileHeader?.EnvironmentId ?? 0,
            HeaderFileNumber = fileHeader?.FileNumber ?? -1,
            HeaderSizeBytes = fileHeader?.SizeBytesOfFile ?? -1,
            HeaderFirstTransactionId = fileHeader?.FirstTransactionId ?? -1,
            IsShared = fileHeader?.IsShared ?? false,
            IsRecycled = fileHeader?.IsRecycled ?? false,
            Entries = entries,
            FirstTransactionId = first,
            LastTransactionId = last,
            StoredBytes = stored,
            UncompressedBytes = uncompressed,
            CompressedEntries = compressed,
            OtherEnvironmentEntries = others,
            UsedBytes = offset,
            End = end,
            NextFileNumber = nextFile,
            NextTransactionId = nextTransaction,
            LaterEntries = damaged ? later.Count : 0,
            LaterFirstTransactionId = damaged ? later.FirstTransactionId : 0,
            LaterLastTransactionId = damaged ? later.LastTransactionId : 0,
        };
    }
}
