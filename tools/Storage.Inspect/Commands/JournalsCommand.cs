using System.Runtime.InteropServices;
using Storage.Inspection;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;

namespace Storage.Inspect.Commands;

/// <summary>
/// <c>journals &lt;dir&gt;</c>: each journal file with its transaction range, entries, stored (compressed) and
/// uncompressed payload sizes, checksum state and hard-link count (a shared journal of an environment group is linked
/// into several directories).
/// </summary>
internal static class JournalsCommand
{
    internal sealed record JournalSummary(long Number, string Path, long Bytes, int Links, string Header, int Entries, long FirstTransaction, long LastTransaction,
        long StoredBytes, long UncompressedBytes, int CompressedEntries, int OtherEnvironmentEntries, long UsedBytes, string State, long? DamagedAtOffset);

    public static int Run(ParsedArgs args, TextWriter output, TextWriter error)
    {
        using var snapshot = EnvironmentSnapshot.Open(args.Expect(1, "<dir>")[0]);
        var synced = snapshot.Header.LastSyncedTransactionId;
        var summaries = JournalEntryReader.ListFiles(snapshot.JournalDirectory).Select(j => Summarize(j.Number, j.Path, snapshot.Header.EnvironmentId)).ToList();
        var walk = snapshot.JournalWalk;
        var damage = walk?.Damage;
        var recovery = damage is null
            ? walk?.TornTailDropped == true
                ? $"recovery replays through transaction {walk.LastTransactionId} and drops {walk.TornTailReason} ({System.IO.Path.GetFileName(walk.TornTailPath)} at offset {walk.TornTailOffsetBytes}): never acknowledged, or damage to the last entry"
                : $"recovery replays through transaction {snapshot.TransactionId}; nothing is lost"
            : $"DAMAGED: {damage.Message} A strict open fails; JournalRecovery = DiscardAfterDamage would keep transactions up to {walk!.LastTransactionId} and lose {damage.LostDescription}";
        var damaged = damage is not null || summaries.Any(s => s.State.StartsWith("damaged", StringComparison.Ordinal) || s.Header.StartsWith("invalid", StringComparison.Ordinal));
        if (args.Json)
        {
            Output.Json(output, new
            {
                lastSyncedTransaction = synced,
                lastTransaction = snapshot.TransactionId,
                recovery,
                lostTransactions = damage?.Lost.Count ?? 0,
                firstLostTransaction = damage is { Lost.Count: > 0 } ? damage.Lost.FirstTransactionId : (long?)null,
                lastLostTransaction = damage is { Lost.Count: > 0 } ? damage.Lost.LastTransactionId : (long?)null,
                files = summaries,
            });
            return damaged ? Cli.Problems : Cli.Ok;
        }
        output.WriteLine($"last synced transaction {synced}, last committed {snapshot.TransactionId}");
        output.WriteLine(recovery);
        Output.Table(output, ["file", "bytes", "links", "header", "entries", "transactions", "stored", "uncompressed", "compressed", "state"],
            summaries.Select(s => new[]
            {
                System.IO.Path.GetFileName(s.Path), Output.N(s.Bytes), s.Links < 0 ? "-" : s.Links.ToString(), s.Header, Output.N(s.Entries),
                s.Entries == 0 ? "-" : $"{s.FirstTransaction}-{s.LastTransaction}", Output.N(s.StoredBytes), Output.N(s.UncompressedBytes),
                s.CompressedEntries.ToString(), s.State + (s.Entries > 0 && s.LastTransaction <= synced ? " (all synced)" : ""),
            }));
        return damaged ? Cli.Problems : Cli.Ok;
    }

    /// <summary>One file on its own: its header, the run of valid entries from the first block after the header, and what ends it.</summary>
    internal static JournalSummary Summarize(long number, string path, ulong environmentId)
    {
        using var reader = new JournalEntryReader(path, number);
        var fileHeader = reader.ReadFileHeader(out var headerProblem);
        var headerText = fileHeader switch
        {
            null => $"invalid ({headerProblem})",
            { IsShared: true, EnvironmentId: var id, FileNumber: var n } when id != environmentId => $"shared, written by {id:x16} as its file {n}",
            { EnvironmentId: var id } when id != environmentId => $"another environment ({id:x16})",
            { FileNumber: var n } when n != number => $"invalid (says it is file {n})",
            { SizeBytesOfFile: var size } when size != reader.LengthBytes => $"invalid (says {size:N0} bytes)",
            { } h => $"ok, from tx {h.FirstTransactionId}{((h.Flags & JournalFileHeader.RecycledFlag) != 0 ? ", recycled" : "")}{(h.IsShared ? ", shared" : "")}",
        };
        int entries = 0, compressed = 0, others = 0;
        long first = -1, last = -1, stored = 0, uncompressed = 0, offset = JournalFileHeader.BlockBytes;
        string state = "ok";
        long? damagedAt = null;
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
                    state = $"continues in file {record.NextFileNumber} with tx {record.NextTransactionId}";
                    break;
                }
            }
            var block = reader.ReadBlockStart(offset);
            if (JournalEndMarker.TryParse(block, environmentId, number) is { } marker)
            {
                state = $"continues in file {marker.NextFileNumber} with tx {marker.NextTransactionId}";
                break;
            }
            if (!block.ContainsAnyExcept((byte)0)) break; // pre-written zeros: the end of what was used
            var raw = MemoryMarshal.Read<JournalEntryHeader>(block);
            if (valid || (raw.Marker == JournalEntryHeader.ExpectedMarker && raw.EnvironmentId == environmentId && raw.TransactionId <= last))
            {
                state = "ok (stale entries of earlier use follow)";
                break;
            }
            var later = new LaterEntries();
            reader.ScanLaterEntries(offset + AlignedBuffer.Alignment, environmentId, last < 0 ? 0 : last, ref later);
            if (later.Count == 0 && fileHeader is { } recycled && (recycled.Flags & JournalFileHeader.RecycledFlag) != 0)
            {
                state = "ok (stale bytes of earlier use follow)";
                break;
            }
            damagedAt = offset;
            state = later.Count > 0
                ? $"damaged at offset {offset}, {later.Count} valid entries follow (tx {later.FirstTransactionId}-{later.LastTransactionId})"
                : $"torn tail at offset {offset}";
            break;
        }
        return new JournalSummary(number, path, reader.LengthBytes, LinkCount(path), headerText, entries, first, last, stored, uncompressed, compressed, others, offset, state, damagedAt);
    }

    /// <summary>The file's hard-link count; -1 where it cannot be told.</summary>
    internal static int LinkCount(string path) => Storage.Platform.Posix.LinkCount(path) is { } count ? (int)count : -1;
}
