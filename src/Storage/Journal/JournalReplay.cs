using Storage.Environments;

namespace Storage.Journal;

/// <summary>Called for each entry of a replay, in transaction order; returning false ends the walk there.</summary>
internal delegate bool JournalEntryVisitor(in JournalEntryHeader entry, ReadOnlySpan<byte> payload, string path, long entryOffsetBytes);

/// <summary>
/// The replay rules, shared by recovery and by the read-only snapshot: starting where the header says the
/// synced state ends, entries must carry consecutive transaction ids. The first entry that is not whole ends
/// the replay when nothing valid follows it (a torn tail, never acknowledged); when a valid later entry
/// follows it, the journal is damaged in the middle and the walk throws naming file and offset.
/// </summary>
internal static class JournalReplay
{
    public static void Walk(IReadOnlyList<(long Number, string Path)> files, in FileHeader header, JournalEntryVisitor visit)
    {
        var environmentId = header.EnvironmentId;
        var lastTransactionId = header.LastSyncedTransactionId;
        (string Path, long Offset)? stop = null;
        for (var i = 0; i < files.Count && stop is null; i++)
        {
            var (number, path) = files[i];
            if (number < header.JournalFileNumber) continue;
            using var reader = new JournalEntryReader(path, number);
            var offset = number == header.JournalFileNumber ? header.JournalOffsetBytes : 0;
            while (reader.TryRead(offset, environmentId, out var entry, out var payload, out var size) && entry.TransactionId == lastTransactionId + 1)
            {
                if (!visit(entry, payload, path, offset)) return;
                lastTransactionId = entry.TransactionId;
                offset += size;
            }
            // A file the writer left for the next one ends with space it never used; the next file must then
            // start with the next transaction. Otherwise this is where the journal ends.
            var nextStartsRight = i + 1 < files.Count && StartsWith(files[i + 1], environmentId, lastTransactionId + 1);
            if (!nextStartsRight) stop = (path, offset);
        }
        if (stop is { } s) CheckNothingValidFollows(files, environmentId, lastTransactionId, s.Path, s.Offset);
    }

    private static bool StartsWith((long Number, string Path) file, ulong environmentId, long transactionId)
    {
        using var reader = new JournalEntryReader(file.Path, file.Number);
        return reader.TryRead(0, environmentId, out var entry, out _, out _) && entry.TransactionId == transactionId;
    }

    private static void CheckNothingValidFollows(IReadOnlyList<(long Number, string Path)> files, ulong environmentId, long lastTransactionId, string stopPath, long stopOffset)
    {
        var after = false;
        foreach (var (number, path) in files)
        {
            var from = 0L;
            if (path == stopPath)
            {
                after = true;
                from = stopOffset;
            }
            else if (!after)
            {
                continue;
            }
            using var reader = new JournalEntryReader(path, number);
            if (reader.HasLaterValidEntry(from, environmentId, lastTransactionId))
            {
                throw new StorageCorruptedException(
                    $"The journal entry after transaction {lastTransactionId} is damaged, and valid later entries follow it.",
                    stopPath, offsetBytes: stopOffset);
            }
        }
    }
}
