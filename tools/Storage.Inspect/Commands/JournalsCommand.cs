using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Storage.Inspection;
using Storage.Journal;
using Storage.Paging;

namespace Storage.Inspect.Commands;

/// <summary>
/// <c>journals &lt;dir&gt;</c>: each journal file with its transaction range, entries, stored (compressed) and
/// uncompressed payload sizes, checksum state and hard-link count (a shared journal of an environment group is linked
/// into several directories).
/// </summary>
internal static unsafe partial class JournalsCommand
{
    internal sealed record JournalSummary(long Number, string Path, long Bytes, int Links, int Entries, long FirstTransaction, long LastTransaction,
        long StoredBytes, long UncompressedBytes, int CompressedEntries, int OtherEnvironmentEntries, long UsedBytes, string State, long? DamagedAtOffset);

    public static int Run(ParsedArgs args, TextWriter output, TextWriter error)
    {
        using var snapshot = EnvironmentSnapshot.Open(args.Expect(1, "<dir>")[0]);
        var synced = snapshot.Header.LastSyncedTransactionId;
        var summaries = JournalEntryReader.ListFiles(snapshot.JournalDirectory).Select(j => Summarize(j.Number, j.Path, snapshot.Header.EnvironmentId)).ToList();
        var damaged = summaries.Any(s => s.DamagedAtOffset is not null && s.State.StartsWith("damaged", StringComparison.Ordinal));
        if (args.Json)
        {
            Output.Json(output, new { lastSyncedTransaction = synced, lastTransaction = snapshot.TransactionId, files = summaries });
            return damaged ? Cli.Problems : Cli.Ok;
        }
        output.WriteLine($"last synced transaction {synced}, last committed {snapshot.TransactionId}");
        Output.Table(output, ["file", "bytes", "links", "entries", "transactions", "stored", "uncompressed", "compressed", "state"],
            summaries.Select(s => new[]
            {
                System.IO.Path.GetFileName(s.Path), Output.N(s.Bytes), s.Links < 0 ? "-" : s.Links.ToString(), Output.N(s.Entries),
                s.Entries == 0 ? "-" : $"{s.FirstTransaction}-{s.LastTransaction}", Output.N(s.StoredBytes), Output.N(s.UncompressedBytes),
                s.CompressedEntries.ToString(), s.State + (s.Entries > 0 && s.LastTransaction <= synced ? " (all synced)" : ""),
            }));
        return damaged ? Cli.Problems : Cli.Ok;
    }

    internal static JournalSummary Summarize(long number, string path, ulong environmentId)
    {
        using var reader = new JournalEntryReader(path, number);
        int entries = 0, compressed = 0, others = 0;
        long first = -1, last = -1, stored = 0, uncompressed = 0, offset = 0;
        string state = "ok";
        long? damagedAt = null;
        var probe = new byte[JournalEntryHeader.SizeBytes];
        using var handle = File.OpenHandle(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
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
            if (valid)
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
            RandomAccess.Read(handle, probe, offset);
            var raw = MemoryMarshal.Read<JournalEntryHeader>(probe);
            if (raw.Marker == 0) break; // pre-written zeros: the end of what was used
            if (raw.Marker == JournalEntryHeader.ExpectedMarker && raw.EnvironmentId != environmentId && raw.PayloadSizeBytes >= 0
                && offset + JournalEntryHeader.SizeBytes + raw.PayloadSizeBytes <= reader.LengthBytes)
            {
                others++; // an entry of another environment of the group, in a shared journal
                offset += AlignedBuffer.AlignUp(JournalEntryHeader.SizeBytes + raw.PayloadSizeBytes);
                continue;
            }
            if (damagedAt is not null && state.StartsWith("damaged", StringComparison.Ordinal))
            {
                offset += AlignedBuffer.Alignment; // looking for the next valid entry after known damage
                continue;
            }
            damagedAt ??= offset;
            var later = reader.HasLaterValidEntry(offset + AlignedBuffer.Alignment, environmentId, last < 0 ? long.MinValue : last);
            state = later ? $"damaged at offset {offset}, valid entries follow" : $"torn tail at offset {offset} (never acknowledged)";
            if (!later) break;
            offset += AlignedBuffer.Alignment;
        }
        return new JournalSummary(number, path, reader.LengthBytes, LinkCount(path), entries, first, last, stored, uncompressed, compressed, others, offset, state, damagedAt);
    }

    /// <summary>The file's hard-link count through statx (whose layout is the same on every Linux architecture); -1 elsewhere.</summary>
    internal static int LinkCount(string path)
    {
        if (!OperatingSystem.IsLinux()) return -1;
        var buffer = stackalloc byte[256];
        const int AtFdCwd = -100;
        const uint StatxNlink = 0x4;
        if (Statx(AtFdCwd, path, 0, StatxNlink, buffer) != 0) return -1;
        return (int)Unsafe.ReadUnaligned<uint>(buffer + 16);
    }

    [LibraryImport("libc", EntryPoint = "statx", StringMarshalling = StringMarshalling.Utf8)]
    private static partial int Statx(int dirFd, string path, int flags, uint mask, byte* buffer);
}
