using System.CommandLine;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary>
/// <c>journals &lt;dir&gt;</c>: each journal file with its transaction range, entries, stored (compressed) and
/// uncompressed payload sizes, checksum state and hard-link count (a shared journal of an environment group is linked
/// into several directories).
/// </summary>
internal static class JournalsCommand
{
    public static Command Create() => Cli.DirectoryCommand("journals", "Journal files: transactions, entries, stored and uncompressed sizes, links, state; and what recovery would replay or lose.", Run);

    internal sealed record JournalSummary(long Number, string Path, long Bytes, int Links, string Header, int Entries, long FirstTransaction, long LastTransaction,
        long StoredBytes, long UncompressedBytes, int CompressedEntries, int OtherEnvironmentEntries, long UsedBytes, string State, long? DamagedAtOffset);

    /// <summary>What one read of the journal found.</summary>
    private sealed record View(long Synced, long LastTransaction, List<JournalSummary> Files, JournalWalkSummary? Walk, bool OpenElsewhere)
    {
        /// <summary>Where the journal looks damaged (file and offset of each finding), empty when it does not.</summary>
        public IReadOnlySet<string> Damage { get; } = Findings(Files, Walk);

        private static HashSet<string> Findings(List<JournalSummary> files, JournalWalkSummary? walk)
        {
            var found = files.Where(f => f.State.StartsWith("damaged", StringComparison.Ordinal) || f.Header.StartsWith("invalid", StringComparison.Ordinal))
                .Select(f => $"{f.Path}@{f.DamagedAtOffset}:{f.Header}").ToHashSet();
            if (walk is { IsDamaged: true }) found.Add($"walk:{walk.DamageMessage}");
            return found;
        }
    }

    public static int Run(string directory, bool json, TextWriter output, TextWriter error)
    {
        // A directory another process has open changes while it is read: a journal entry being written looks torn or
        // damaged, a file switched or retired goes missing. There a finding counts only when the same one is found
        // again by later reads, as the check does (EnvironmentSnapshot.LiveConfirmations in a row).
        var view = ReadSettled(directory);
        var attempts = 1;
        var runs = new Dictionary<string, int>();
        void Count(View v)
        {
            foreach (var gone in runs.Keys.Where(k => !v.Damage.Contains(k)).ToList()) runs.Remove(gone);
            foreach (var finding in v.Damage) runs[finding] = runs.GetValueOrDefault(finding) + 1;
        }
        Count(view);
        while (view.OpenElsewhere && view.Damage.Count > 0 && attempts < EnvironmentSnapshot.MaxLiveAttempts && !runs.Values.Any(r => r >= EnvironmentSnapshot.LiveConfirmations))
        {
            view = ReadSettled(directory);
            attempts++;
            Count(view);
        }
        var confirmed = !view.OpenElsewhere ? view.Damage.Count > 0 : runs.Values.Any(r => r >= EnvironmentSnapshot.LiveConfirmations);
        var inFlight = view.OpenElsewhere && !confirmed;
        var walk = view.Walk;
        var recovery = walk is { IsDamaged: true } && !inFlight
            ? $"DAMAGED: {walk.DamageMessage} A strict open fails; JournalRecovery = DiscardAfterDamage would keep transactions up to {walk.LastTransactionId} and lose {walk.LostDescription}"
            : inFlight && view.Damage.Count > 0
                ? $"open in another process, which was writing while the journal was read ({attempts} reads): the journal through transaction {view.LastTransaction} is whole, and what looked damaged after it changed between reads, so it is a write in flight"
            : walk?.TornTailDropped == true && view.OpenElsewhere
                ? $"open in another process: the journal is whole through transaction {walk.LastTransactionId}; the entry after it is being written ({System.IO.Path.GetFileName(walk.TornTailPath)} at offset {walk.TornTailOffsetBytes})"
            : walk?.TornTailDropped == true
                ? $"recovery replays through transaction {walk.LastTransactionId} and drops {walk.TornTailReason} ({System.IO.Path.GetFileName(walk.TornTailPath)} at offset {walk.TornTailOffsetBytes}): never acknowledged, or damage to the last entry"
            : $"recovery replays through transaction {view.LastTransaction}; nothing is lost";
        var files = inFlight
            ? view.Files.Select(f => f.State.StartsWith("torn tail", StringComparison.Ordinal) || f.State.StartsWith("damaged", StringComparison.Ordinal)
                ? f with { State = $"being written at offset {f.UsedBytes}", DamagedAtOffset = null }
                : f).ToList()
            : view.Files;
        if (json)
        {
            Output.Json(output, new
            {
                lastSyncedTransaction = view.Synced,
                lastTransaction = view.LastTransaction,
                openElsewhere = view.OpenElsewhere,
                reads = attempts,
                recovery,
                lostTransactions = inFlight ? 0 : walk?.LostEntries ?? 0,
                firstLostTransaction = !inFlight && walk is { LostEntries: > 0 } ? walk.FirstLostTransactionId : (long?)null,
                lastLostTransaction = !inFlight && walk is { LostEntries: > 0 } ? walk.LastLostTransactionId : (long?)null,
                files,
            });
            return confirmed ? Cli.Problems : Cli.Ok;
        }
        output.WriteLine($"last synced transaction {view.Synced}, last committed {view.LastTransaction}");
        output.WriteLine(recovery);
        Output.Table(output, ["file", "bytes", "links", "header", "entries", "transactions", "stored", "uncompressed", "compressed", "state"],
            files.Select(s => new[]
            {
                System.IO.Path.GetFileName(s.Path), Output.N(s.Bytes), s.Links < 0 ? "-" : s.Links.ToString(), s.Header, Output.N(s.Entries),
                s.Entries == 0 ? "-" : $"{s.FirstTransaction}-{s.LastTransaction}", Output.N(s.StoredBytes), Output.N(s.UncompressedBytes),
                s.CompressedEntries.ToString(), s.State + (s.Entries > 0 && s.LastTransaction <= view.Synced ? " (all synced)" : ""),
            }));
        return confirmed ? Cli.Problems : Cli.Ok;
    }

    /// <summary>
    /// <see cref="Read"/>, again when a file of a directory another process has open went away under it (retired between
    /// listing and reading), up to <see cref="EnvironmentSnapshot.MaxLiveAttempts"/> times.
    /// </summary>
    private static View ReadSettled(string directory)
    {
        for (var attempt = 1; ; attempt++)
        {
            try
            {
                return Read(directory);
            }
            catch (Exception e) when (e is StorageException or IOException && attempt < EnvironmentSnapshot.MaxLiveAttempts && EnvironmentSnapshot.IsLocked(directory))
            {
                // Moved on under the read: read again.
            }
        }
    }

    /// <summary>One read of the journal: the snapshot's walk and every file's summary. A file of a live environment retired while it was read is left out.</summary>
    private static View Read(string directory)
    {
        using var snapshot = EnvironmentSnapshot.Open(directory);
        var files = new List<JournalSummary>();
        foreach (var (number, path) in snapshot.ListJournalFiles())
        {
            try
            {
                files.Add(Summarize(number, path, snapshot.Header.EnvironmentId));
            }
            catch (Exception e) when (snapshot.OpenElsewhere && e is InspectionException or IOException or StorageException && !File.Exists(path))
            {
                // Retired (deleted or renamed) by the process that has the environment open, after it was listed.
            }
        }
        return new View(snapshot.Header.LastSyncedTransactionId, snapshot.TransactionId, files, snapshot.JournalWalk, snapshot.OpenElsewhere);
    }

    /// <summary>One file on its own, as the command prints it: its header and what ends its entries in words.</summary>
    internal static JournalSummary Summarize(long number, string path, ulong environmentId)
    {
        var file = EnvironmentSnapshot.SummarizeJournalFile(path, number, environmentId);
        var header = file.HeaderProblem is { } problem ? $"invalid ({problem})"
            : file.IsShared && file.HeaderEnvironmentId != environmentId ? $"shared, written by {file.HeaderEnvironmentId:x16} as its file {file.HeaderFileNumber}"
            : file.HeaderEnvironmentId != environmentId ? $"another environment ({file.HeaderEnvironmentId:x16})"
            : file.HeaderFileNumber != number ? $"invalid (says it is file {file.HeaderFileNumber})"
            : file.HeaderSizeBytes != file.LengthBytes ? $"invalid (says {file.HeaderSizeBytes:N0} bytes)"
            : $"ok, from tx {file.HeaderFirstTransactionId}{(file.IsRecycled ? ", recycled" : "")}{(file.IsShared ? ", shared" : "")}";
        var state = file.End switch
        {
            JournalFileEnd.ContinuesInNextFile => $"continues in file {file.NextFileNumber} with tx {file.NextTransactionId}",
            JournalFileEnd.StaleEntriesFollow => "ok (stale entries of earlier use follow)",
            JournalFileEnd.StaleBytesFollow => "ok (stale bytes of earlier use follow)",
            JournalFileEnd.Damaged => $"damaged at offset {file.UsedBytes}, {file.LaterEntries} valid entries follow (tx {file.LaterFirstTransactionId}-{file.LaterLastTransactionId})",
            JournalFileEnd.TornTail => $"torn tail at offset {file.UsedBytes}",
            _ => "ok",
        };
        var damagedAt = file.End is JournalFileEnd.Damaged or JournalFileEnd.TornTail ? file.UsedBytes : (long?)null;
        return new JournalSummary(number, path, file.LengthBytes, file.LinkCount, header, file.Entries, file.FirstTransactionId, file.LastTransactionId,
            file.StoredBytes, file.UncompressedBytes, file.CompressedEntries, file.OtherEnvironmentEntries, file.UsedBytes, state, damagedAt);
    }
}
