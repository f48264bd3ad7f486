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
    public static Command Create()
    {
        var directory = Cli.DirectoryArgument();
        var json = Cli.JsonOption();
        var command = new Command("journals", "Journal files: transactions, entries, stored and uncompressed sizes, links, state; and what recovery would replay or lose.")
        {
            directory,
            json,
        };
        command.SetAction(parse => Run(parse.GetRequiredValue(directory), parse.GetValue(json), parse.InvocationConfiguration.Output, parse.InvocationConfiguration.Error));
        return command;
    }

    internal sealed record JournalSummary(long Number, string Path, long Bytes, int Links, string Header, int Entries, long FirstTransaction, long LastTransaction,
        long StoredBytes, long UncompressedBytes, int CompressedEntries, int OtherEnvironmentEntries, long UsedBytes, string State, long? DamagedAtOffset);

    public static int Run(string directory, bool json, TextWriter output, TextWriter error)
    {
        using var snapshot = EnvironmentSnapshot.Open(directory);
        var synced = snapshot.Header.LastSyncedTransactionId;
        var summaries = snapshot.ListJournalFiles().Select(j => Summarize(j.Number, j.Path, snapshot.Header.EnvironmentId)).ToList();
        var walk = snapshot.JournalWalk;
        var recovery = walk is not { IsDamaged: true }
            ? walk?.TornTailDropped == true
                ? $"recovery replays through transaction {walk.LastTransactionId} and drops {walk.TornTailReason} ({System.IO.Path.GetFileName(walk.TornTailPath)} at offset {walk.TornTailOffsetBytes}): never acknowledged, or damage to the last entry"
                : $"recovery replays through transaction {snapshot.TransactionId}; nothing is lost"
            : $"DAMAGED: {walk.DamageMessage} A strict open fails; JournalRecovery = DiscardAfterDamage would keep transactions up to {walk.LastTransactionId} and lose {walk.LostDescription}";
        var damaged = walk is { IsDamaged: true } || summaries.Any(s => s.State.StartsWith("damaged", StringComparison.Ordinal) || s.Header.StartsWith("invalid", StringComparison.Ordinal));
        if (json)
        {
            Output.Json(output, new
            {
                lastSyncedTransaction = synced,
                lastTransaction = snapshot.TransactionId,
                recovery,
                lostTransactions = walk?.LostEntries ?? 0,
                firstLostTransaction = walk is { LostEntries: > 0 } ? walk.FirstLostTransactionId : (long?)null,
                lastLostTransaction = walk is { LostEntries: > 0 } ? walk.LastLostTransactionId : (long?)null,
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
