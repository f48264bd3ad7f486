using Storage.Journal;
using Storage.State;

namespace Storage.Recovery;

/// <summary>Called for each entry of a replay, in transaction order; returning false ends the walk there.</summary>
internal delegate bool JournalEntryVisitor(in JournalEntryHeader entry, ReadOnlySpan<byte> payload, string path, long entryOffsetBytes);

/// <summary>Journal damage found by a walk: what is wrong, where, and the valid entries it cuts off.</summary>
internal sealed record JournalDamage(string Message, string Path, long OffsetBytes, long FromFileNumber, LaterEntries Lost)
{
    /// <summary>The transactions a recovery that accepts the loss would give up, in words.</summary>
    public string LostDescription => Lost.Count == 0
        ? "whatever the damaged part held (no valid entry after it was found)"
        : $"{Lost.Count} valid later entr{(Lost.Count == 1 ? "y" : "ies")} (transactions {Lost.FirstTransactionId}-{Lost.LastTransactionId}, journal files {Lost.FirstFileNumber}-{Lost.LastFileNumber})";
}

/// <summary>What a walk of the journal found.</summary>
internal sealed class JournalWalkResult
{
    public long LastTransactionId { get; set; }

    public int EntriesReplayed { get; set; }

    /// <summary>The file the walk ended in and the offset after its last replayed entry (where the next entry would go).</summary>
    public long EndFileNumber { get; set; } = -1;

    public string? EndPath { get; set; }

    /// <summary>The file the walk ended in is a shared file of an environment group, which no one writes into again once its writer closed.</summary>
    public bool EndsInSharedFile { get; set; }

    public long EndOffsetBytes { get; set; }

    /// <summary>Where an incomplete or damaged entry after the last replayed one was dropped (never acknowledged, or damage that looks the same).</summary>
    public string? TornTailPath { get; set; }

    public long TornTailOffsetBytes { get; set; } = -1;

    public string? TornTailReason { get; set; }

    public bool TornTailDropped => TornTailPath is not null;

    /// <summary>Damage that is not a torn tail; null when the journal is sound.</summary>
    public JournalDamage? Damage { get; set; }

    /// <summary>The visitor ended the walk (the snapshot found an impossible entry).</summary>
    public bool StoppedByVisitor { get; set; }
}

/// <summary>
/// The replay rules, shared by recovery, the read-only snapshot and the inspection tool. The walk starts where the
/// data file's header says the synced state ends and follows entries with consecutive transaction ids, within a
/// file and from file to file (by the end marker the writer leaves, or by the next file's header). Every file on
/// the way must carry a valid header of this environment with its own number, and be as long as that header says;
/// or be a shared file of an environment group (<see cref="JournalFileHeader.SharedFlag"/>), where the walk steps
/// over the whole, valid entries of the other members and follows the group end marker's record of this environment.
/// </summary>
/// <remarks>
/// Where the walk ends: an invalid entry there is a torn tail (an entry never acknowledged, or damage that looks
/// exactly like one) when no valid later entry follows it anywhere; the result says so. Damage is anything else:
/// a valid later entry after the end, a missing file that the header or an end marker points to, a file cut short,
/// a file header that is wrong. The walk does not throw for damage; the caller decides (a strict open fails, an open
/// that accepts the loss keeps what was replayed).
/// </remarks>
internal static class JournalReplay
{
    public static JournalWalkResult Walk(IReadOnlyList<(long Number, string Path)> files, string journalDirectory, in FileHeader header, JournalEntryVisitor visit)
    {
        var environmentId = header.EnvironmentId;
        var byNumber = new Dictionary<long, string>(files.Count);
        foreach (var (number, path) in files) byNumber[number] = path;
        var result = new JournalWalkResult { LastTransactionId = header.LastSyncedTransactionId };

        var fileNumber = header.JournalFileNumber;
        var offset = header.JournalOffsetBytes;
        var firstFile = true;
        while (true)
        {
            if (!byNumber.TryGetValue(fileNumber, out var path))
            {
                var expected = Path.Combine(journalDirectory, JournalFile.FileName(fileNumber));
                var why = firstFile
                    ? $"Journal file {JournalFile.FileName(fileNumber)} is missing; the data file's header says transaction {result.LastTransactionId + 1} goes there."
                    : $"Journal file {JournalFile.FileName(fileNumber)} is missing; the journal file before it says the journal continues there with transaction {result.LastTransactionId + 1}.";
                SetDamage(result, files, environmentId, why, expected, 0, fileNumber, fromOffsetInFile: 0);
                return result;
            }
            using var reader = new JournalEntryReader(path, fileNumber);
            var shared = CheckFileHeader(reader, environmentId, fileNumber, firstFile ? null : result.LastTransactionId + 1, ref offset, result, files);
            result.EndFileNumber = fileNumber;
            result.EndPath = path;
            result.EndsInSharedFile = shared;
            result.EndOffsetBytes = offset;
            while (true)
            {
                if (shared && reader.TryReadForeign(offset, environmentId, out _, out var foreignSize))
                {
                    // Another member's entry: whole and valid, so the walk steps over it.
                    offset += foreignSize;
                    result.EndOffsetBytes = offset;
                    continue;
                }
                if (!reader.TryRead(offset, environmentId, out var entry, out var payload, out var size) || entry.TransactionId != result.LastTransactionId + 1) break;
                if (!visit(entry, payload, path, offset))
                {
                    result.StoppedByVisitor = true;
                    return result;
                }
                result.LastTransactionId = entry.TransactionId;
                result.EntriesReplayed++;
                offset += size;
                result.EndOffsetBytes = offset;
            }

            var next = shared ? NextAfterShared(reader, offset, environmentId, fileNumber) : NextAfter(reader, offset, environmentId, fileNumber);
            if (next is var (nextFileNumber, nextTransactionId))
            {
                if (nextTransactionId != result.LastTransactionId + 1)
                {
                    SetDamage(result, files, environmentId,
                        $"Journal file {Path.GetFileName(path)} ends with a pointer to transaction {nextTransactionId}, but its last entry is transaction {result.LastTransactionId}.",
                        path, offset, fileNumber, offset);
                    return result;
                }
                fileNumber = nextFileNumber;
                offset = JournalFileHeader.BlockBytes;
                firstFile = false;
                continue;
            }
            var block = reader.ReadBlockStart(offset);
            if (result.Damage is null && StartsNext(byNumber, fileNumber + 1, environmentId, result.LastTransactionId + 1)
                && !HasLaterEntries(reader, offset, environmentId, result.LastTransactionId))
            {
                // The writer put the next file into use but stopped before it wrote the marker here: nothing after it was
                // acknowledged in this file. Unless valid later entries follow here: then a file switch failed after the next
                // file got its name, the writer went on in this one, and what stopped the walk is damage.
                fileNumber++;
                offset = JournalFileHeader.BlockBytes;
                firstFile = false;
                continue;
            }

            if (result.Damage is null)
            {
                ClassifyTail(reader, block, environmentId, result, offset, shared);
                var lost = new LaterEntries();
                reader.ScanLaterEntries(offset, environmentId, result.LastTransactionId, ref lost);
                if (!shared && !result.TornTailDropped && lost.FirstNonZeroOffset >= 0) ClassifyLaterBytes(reader, result, lost.FirstNonZeroOffset);
                ScanFilesAfter(files, fileNumber, environmentId, result.LastTransactionId, ref lost);
                if (lost.Count > 0)
                {
                    result.TornTailPath = null;
                    result.TornTailReason = null;
                    result.TornTailOffsetBytes = -1;
                    result.Damage = new JournalDamage(
                        $"The journal entry after transaction {result.LastTransactionId} is damaged, and valid later entries follow it (transactions {lost.FirstTransactionId}-{lost.LastTransactionId}).",
                        path, offset, fileNumber, lost);
                }
            }
            else
            {
                // Damage found in this file's header or length: what is cut off is whatever valid follows.
                var lost = new LaterEntries();
                reader.ScanLaterEntries(offset, environmentId, result.LastTransactionId, ref lost);
                ScanFilesAfter(files, fileNumber, environmentId, result.LastTransactionId, ref lost);
                result.Damage = result.Damage with { Lost = lost };
            }
            return result;
        }
    }

    /// <summary>
    /// The file must carry a valid header of this environment with its own number and be exactly as long as the
    /// header says (journal files are pre-sized: a shorter one was cut). Damage found here is recorded, and the walk
    /// still replays the valid entries the file holds, so an open that accepts the loss keeps them.
    /// </summary>
    /// <returns>Whether the file is a shared file of an environment group (entries of other environments are stepped over).</returns>
    /// <remarks>
    /// A shared file's header is its writer's (the group's root): in another member's folder the file has that member's
    /// number, and its first entry of that member is found by the walk, so only the root checks number and first transaction.
    /// </remarks>
    private static bool CheckFileHeader(JournalEntryReader reader, ulong environmentId, long fileNumber, long? firstTransactionId, ref long offset,
        JournalWalkResult result, IReadOnlyList<(long Number, string Path)> files)
    {
        var name = Path.GetFileName(reader.Path);
        var fileHeader = reader.ReadFileHeader(out var problem);
        var shared = fileHeader is { IsShared: true };
        var written = fileHeader is { } w && w.EnvironmentId == environmentId;
        string? why = null;
        if (fileHeader is not { } h) why = $"Journal file {name} has no valid header ({problem}).";
        else if (!written && !shared) why = $"Journal file {name} belongs to another environment ({h.EnvironmentId:x16}).";
        else if (written && h.FileNumber != fileNumber) why = $"Journal file {name} says it is file {h.FileNumber}.";
        else if (reader.LengthBytes != h.SizeBytesOfFile) why = $"Journal file {name} is {reader.LengthBytes:N0} bytes long, but its header says {h.SizeBytesOfFile:N0}: it was cut short (or extended) after it was written.";
        else if (written && firstTransactionId is { } first && h.FirstTransactionId != first) why = $"Journal file {name} starts with transaction {h.FirstTransactionId}, but the journal continues with transaction {first}.";
        if (offset < JournalFileHeader.BlockBytes || offset > reader.LengthBytes)
        {
            why ??= $"The data file's header points to offset {offset} of journal file {name}, outside its entries.";
            offset = Math.Clamp(offset, JournalFileHeader.BlockBytes, Math.Max(JournalFileHeader.BlockBytes, reader.LengthBytes));
        }
        if (why is not null && result.Damage is null)
        {
            result.Damage = new JournalDamage(why, reader.Path, 0, fileNumber, default);
        }
        return shared;
    }

    /// <summary>Where an environment's own file says the journal goes on (its end marker), or null.</summary>
    private static (long FileNumber, long TransactionId)? NextAfter(JournalEntryReader reader, long offset, ulong environmentId, long fileNumber) =>
        JournalEndMarker.TryParse(reader.ReadBlockStart(offset), environmentId, fileNumber) is { } marker ? (marker.NextFileNumber, marker.NextTransactionId) : null;

    /// <summary>Where a shared file's group end marker says this environment's journal goes on, or null.</summary>
    private static (long FileNumber, long TransactionId)? NextAfterShared(JournalEntryReader reader, long offset, ulong environmentId, long fileNumber)
    {
        var block = reader.ReadBlock(offset);
        // In a recycled shared file, only a marker of the file's present use counts.
        if (reader.IsStaleGroupEndMarker(block)) return null;
        return JournalGroupEndMarker.TryFind(block, environmentId, fileNumber) is { } record ? (record.NextFileNumber, record.NextTransactionId) : null;
    }

    private static bool HasLaterEntries(JournalEntryReader reader, long offset, ulong environmentId, long lastTransactionId)
    {
        var later = new LaterEntries();
        reader.ScanLaterEntries(offset, environmentId, lastTransactionId, ref later);
        return later.Count > 0;
    }

    private static bool StartsNext(Dictionary<long, string> byNumber, long fileNumber, ulong environmentId, long transactionId)
    {
        if (!byNumber.TryGetValue(fileNumber, out var path)) return false;
        var header = JournalFiles.ReadHeader(path, out var length, out _);
        if (header is not { } h || h.SizeBytesOfFile != length) return false;
        if (h.EnvironmentId == environmentId) return h.FileNumber == fileNumber && h.FirstTransactionId == transactionId;
        return h.IsShared && FirstOwnTransaction(path, fileNumber, environmentId) == transactionId;
    }

    /// <summary>The transaction of this environment's first entry in a shared file (stepping over the other members' entries), or 0.</summary>
    private static long FirstOwnTransaction(string path, long fileNumber, ulong environmentId)
    {
        using var reader = new JournalEntryReader(path, fileNumber);
        long offset = JournalFileHeader.BlockBytes;
        while (reader.TryReadForeign(offset, environmentId, out _, out var size)) offset += size;
        return reader.TryRead(offset, environmentId, out var entry, out _, out _) ? entry.TransactionId : 0;
    }

    /// <summary>
    /// The block where the walk ended is zeros, but something was written further on in a file never recycled (whose
    /// unused part is zeros): the start of an entry that never completed (a device may persist a write's later sectors
    /// and not its first) or damage to it. Either way an entry was there, and the open says it dropped one.
    /// </summary>
    private static void ClassifyLaterBytes(JournalEntryReader reader, JournalWalkResult result, long nonZeroOffset)
    {
        if (!IsNeverRecycled(reader)) return;
        result.TornTailPath = reader.Path;
        result.TornTailOffsetBytes = nonZeroOffset;
        result.TornTailReason = "bytes that are not an entry further on, after zeros";
    }

    /// <summary>A file whose unused part is still the zeros it was created with (a recycled one holds stale bytes there).</summary>
    private static bool IsNeverRecycled(JournalEntryReader reader) =>
        reader.ReadFileHeader(out _) is { } h && (h.Flags & JournalFileHeader.RecycledFlag) == 0;

    /// <summary>
    /// Says whether the bytes where the walk ended show an entry that was dropped: a header of this environment
    /// for the next transaction (written in part, or damaged), a torn end marker, or, in a file never recycled,
    /// anything but zeros. A recycled file holds stale bytes of its earlier use there, which say nothing (in a recycled
    /// shared file, entries and group end markers of other numbers than the file's).
    /// </summary>
    private static void ClassifyTail(JournalEntryReader reader, ReadOnlySpan<byte> block, ulong environmentId, JournalWalkResult result, long offset, bool shared)
    {
        if (block.Length == 0 || !block.ContainsAnyExcept((byte)0)) return;
        string? reason = null;
        var marker = BitConverter.ToUInt64(block);
        if (marker == JournalEntryHeader.ExpectedMarker && block.Length >= JournalEntryHeader.SizeBytes)
        {
            var entry = System.Runtime.InteropServices.MemoryMarshal.Read<JournalEntryHeader>(block);
            if (entry.EnvironmentId == environmentId && entry.TransactionId > result.LastTransactionId
                && reader.IsOfPresentUse(entry.SharedFileStamp))
            {
                reason = $"an incomplete or damaged entry of transaction {entry.TransactionId}";
            }
        }
        else if (!shared && marker == JournalEndMarker.ExpectedMagic && block.Length >= JournalEndMarker.SizeBytes)
        {
            var end = System.Runtime.InteropServices.MemoryMarshal.Read<JournalEndMarker>(block);
            if (end.FileNumber == reader.Number) reason = "an incomplete or damaged end marker";
        }
        else if (shared && JournalGroupEndMarker.HasMagic(block))
        {
            // In a recycled shared file, a marker of the file's earlier use is stale bytes like any other.
            if (reader.IsStaleGroupEndMarker(block)) return;
            reason = "an incomplete or damaged group end marker";
        }
        else if (IsNeverRecycled(reader))
        {
            reason = "bytes that are not an entry after the last one";
        }
        if (reason is null) return;
        result.TornTailPath = reader.Path;
        result.TornTailOffsetBytes = offset;
        result.TornTailReason = reason;
    }

    private static void ScanFilesAfter(IReadOnlyList<(long Number, string Path)> files, long afterFileNumber, ulong environmentId, long afterTransactionId, ref LaterEntries lost)
    {
        foreach (var (number, path) in files)
        {
            if (number <= afterFileNumber) continue;
            using var reader = new JournalEntryReader(path, number);
            reader.ScanLaterEntries(0, environmentId, afterTransactionId, ref lost);
        }
    }

    private static void SetDamage(JournalWalkResult result, IReadOnlyList<(long Number, string Path)> files, ulong environmentId, string message, string path,
        long offset, long fromFileNumber, long fromOffsetInFile)
    {
        var lost = new LaterEntries();
        foreach (var (number, filePath) in files)
        {
            if (number < fromFileNumber) continue;
            using var reader = new JournalEntryReader(filePath, number);
            reader.ScanLaterEntries(number == fromFileNumber ? fromOffsetInFile : 0, environmentId, result.LastTransactionId, ref lost);
        }
        result.Damage ??= new JournalDamage(message, path, offset, fromFileNumber, lost);
    }
}
