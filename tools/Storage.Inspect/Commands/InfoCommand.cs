using System.CommandLine;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary><c>info &lt;dir&gt;</c>: format, page size, file sizes, both header slots, journal files and whether a process holds the environment.</summary>
internal static class InfoCommand
{
    public static Command Create() => Cli.DirectoryCommand("info", "Format, page size, file sizes, both header slots, journal files and whether a process has the environment open.", Run);

    public static int Run(string directory, bool json, TextWriter output, TextWriter error)
    {
        directory = Path.GetFullPath(directory);
        using var snapshot = EnvironmentSnapshot.Open(directory);
        var journals = snapshot.ListJournalFiles()
            .Select(j => (j.Number, j.Path, Size: SafeLength(j.Path))).ToList();
        var locked = EnvironmentSnapshot.IsLocked(directory);
        var slots = snapshot.Slots.Select(s => new
        {
            slot = s.Slot,
            valid = s.IsValid,
            problem = s.Problem,
            chosen = s.Slot == snapshot.ChosenSlot,
            sequence = s.Header?.Sequence,
            formatVersion = s.Header?.FormatVersion,
            lastSyncedTransaction = s.Header?.LastSyncedTransactionId,
            nextPage = s.Header?.NextPageNumber,
            journalFile = s.Header?.JournalFileNumber,
            journalOffset = s.Header?.JournalOffsetBytes,
            rootPage = s.Header?.RootPage,
        }).ToList();
        if (json)
        {
            Output.Json(output, new
            {
                directory,
                dataFile = snapshot.DataPath,
                formatVersion = snapshot.Header.FormatVersion,
                pageSize = snapshot.Header.PageSizeBytes,
                environmentId = snapshot.Header.EnvironmentId.ToString("x16"),
                dataFileBytes = snapshot.FileLengthBytes,
                dataFilePages = snapshot.FilePageCount,
                nextPage = snapshot.NextPageNumber,
                lastTransaction = snapshot.TransactionId,
                journalEntriesAfterSync = snapshot.JournalEntriesApplied,
                slots,
                journalFiles = journals.Select(j => new { number = j.Number, path = j.Path, bytes = j.Size }),
                journalBytes = journals.Sum(j => j.Size),
                locked,
                problems = snapshot.Problems.Select(p => p.ToString()),
            });
            return Cli.Ok;
        }
        output.WriteLine($"data file       {snapshot.DataPath}");
        output.WriteLine($"format          {snapshot.Header.FormatVersion}, page size {snapshot.Header.PageSizeBytes}, environment id {snapshot.Header.EnvironmentId:x16}");
        output.WriteLine($"size            {Output.N(snapshot.FileLengthBytes)} bytes ({Output.N(snapshot.FilePageCount)} pages), {Output.N(snapshot.NextPageNumber)} pages in use or free");
        output.WriteLine($"last committed  transaction {snapshot.TransactionId} ({snapshot.JournalEntriesApplied} journal entries after the last sync)");
        foreach (var s in snapshot.Slots)
        {
            var chosen = s.Slot == snapshot.ChosenSlot ? " (current)" : "";
            if (s.Header is not { } h)
            {
                output.WriteLine($"header slot {s.Slot}   invalid: {s.Problem}");
                continue;
            }
            output.WriteLine($"header slot {s.Slot}   sequence {h.Sequence}, synced through tx {h.LastSyncedTransactionId}, next page {h.NextPageNumber}, " +
                $"journal {h.JournalFileNumber}@{h.JournalOffsetBytes}, root page {h.RootPage}, checksum ok{chosen}");
        }
        output.WriteLine($"journal files   {journals.Count} ({Output.N(journals.Sum(j => j.Size))} bytes)");
        foreach (var (_, path, size) in journals) output.WriteLine($"  {Path.GetFileName(path)}  {Output.N(size)} bytes");
        output.WriteLine($"locked          {(locked ? "yes (a process has the environment open)" : "no")}");
        foreach (var problem in snapshot.Problems) output.WriteLine(problem.ToString());
        return Cli.Ok;
    }

    private static long SafeLength(string path)
    {
        try
        {
            return new FileInfo(path).Length;
        }
        catch (IOException)
        {
            return -1;
        }
    }
}
