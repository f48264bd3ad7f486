using System.CommandLine;
using Storage.Inspection;

namespace Storage.Inspect.Commands;

/// <summary>
/// <c>backup &lt;dir&gt; &lt;backup-dir&gt;</c>, <c>restore &lt;backup-file&gt; &lt;target&gt;</c> and
/// <c>verify &lt;backup-file&gt;</c>: the library's full backup, its restore into a new directory, and a whole read of a
/// backup that checks every part without restoring it.
/// </summary>
/// <remarks>
/// A backup of an environment another process has open is taken by that process
/// (<see cref="StorageEnvironment.BackupAsync(string, IProgress{BackupProgress}, CancellationToken)"/>): this command
/// refuses such a directory. A closed one it opens (which finishes a recovery the journal asks for, as any open does),
/// backs up and closes.
/// </remarks>
internal static class BackupCommands
{
    public static Command CreateBackup()
    {
        var directory = Cli.DirectoryArgument("The environment to back up (closed: a process that has it open takes its own backups).");
        var target = new Argument<string>("backup-dir") { Description = "The directory the backup file goes into (created when missing)." };
        var json = Cli.JsonOption();
        var command = new Command("backup", "A full backup of the last committed transaction, as a file full-<transaction>.storage-backup in the backup directory.")
        {
            directory,
            target,
            json,
        };
        command.SetAction(parse => Backup(parse.GetRequiredValue(directory), parse.GetRequiredValue(target), parse.GetValue(json), parse.InvocationConfiguration.Output, parse.InvocationConfiguration.Error));
        return command;
    }

    public static Command CreateRestore()
    {
        var target = new Argument<string>("target") { Description = "The new environment's directory: missing or empty." };
        var files = new Argument<string[]>("backup") { Description = "A backup file; or a chain: the full backup, then incremental files in order; or, with --archive, an archive directory.", Arity = ArgumentArity.OneOrMore };
        var toTransaction = new Option<long?>("--to-tx") { Description = "Restore the state of this transaction (from a chain or an archive), not the newest." };
        var archive = new Option<bool>("--archive") { Description = "The backup is a continuous archive directory: its newest base before the transaction and the files after it." };
        var toTime = new Option<DateTime?>("--to-time") { Description = "With --archive: restore the newest transaction an archive file had reached when it was taken at or before this time (ISO 8601; UTC unless it says otherwise)." };
        var compact = new Option<bool>("--compact") { Description = "Compact the restored environment: the pages in use move to the front and the file is cut." };
        var json = Cli.JsonOption();
        var command = new Command("restore", "Restores a backup, a chain or an archive into a new directory; the result is checked before it is put in place, and nothing is left behind on failure.")
        {
            target,
            files,
            toTransaction,
            toTime,
            archive,
            compact,
            json,
        };
        command.Validators.Add(result =>
        {
            if (result.GetValue(toTime) is not null && (!result.GetValue(archive) || result.GetValue(toTransaction) is not null)) result.AddError("--to-time goes with --archive, and not with --to-tx");
        });
        command.SetAction(parse => Restore(parse.GetRequiredValue(files), parse.GetRequiredValue(target),
            parse.GetValue(toTime) is { } time ? StorageEnvironment.ArchiveTransactionAt(parse.GetRequiredValue(files)[0], time.Kind == DateTimeKind.Unspecified ? DateTime.SpecifyKind(time, DateTimeKind.Utc) : time) : parse.GetValue(toTransaction),
            parse.GetValue(archive), parse.GetValue(compact),
            parse.GetValue(json), parse.InvocationConfiguration.Output, parse.InvocationConfiguration.Error));
        return command;
    }

    public static Command CreateArchive()
    {
        var directory = new Argument<string>("archive-dir") { Description = "A continuous archive directory (StorageOptions.ArchiveDirectory) or any directory of backup files." };
        var json = Cli.JsonOption();
        var command = new Command("archive", "The backups in a directory: each base and incremental file, the transactions it holds, its size, and where a chain breaks.")
        {
            directory,
            json,
        };
        command.SetAction(parse => Archive(parse.GetRequiredValue(directory), parse.GetValue(json), parse.InvocationConfiguration.Output));
        return command;
    }

    public static Command CreateVerify()
    {
        var file = new Argument<string>("backup-file") { Description = "A backup file (full-<transaction>.storage-backup)." };
        var json = Cli.JsonOption();
        var command = new Command("verify", "Reads a backup whole and checks its header, every block's checksum and place, and its trailer, without restoring it.")
        {
            file,
            json,
        };
        command.SetAction(parse => Verify(parse.GetRequiredValue(file), parse.GetValue(json), parse.InvocationConfiguration.Output));
        return command;
    }

    private static int Backup(string directory, string target, bool json, TextWriter output, TextWriter error)
    {
        if (EnvironmentSnapshot.IsLocked(directory))
        {
            throw new InspectionException($"{Path.GetFullPath(directory)} is open in another process: that process takes its backups (StorageEnvironment.BackupAsync)");
        }
        if (!File.Exists(Path.Combine(directory, "data.storage"))) throw new InspectionException($"no environment at {Path.GetFullPath(directory)}");
        var progress = ProgressBar.For(output, error);
        BackupResult result;
        using (var env = StorageEnvironment.Open(directory, new StorageOptions { CreateIfMissing = false }))
        {
            result = env.BackupAsync(target, progress).GetAwaiter().GetResult();
        }
        progress?.Clear();
        if (json)
        {
            Output.Json(output, new { file = result.Path, transactionId = result.TransactionId, pages = result.Pages, bytes = result.Bytes, seconds = result.Duration.TotalSeconds });
            return Cli.Ok;
        }
        output.WriteLine($"backed up transaction {result.TransactionId}: {Output.N(result.Pages)} pages, {Output.Bytes(result.Bytes)} in {result.Duration.TotalSeconds:0.00} s -> {result.Path}");
        return Cli.Ok;
    }

    private static int Restore(string[] files, string target, long? toTransaction, bool archive, bool compact, bool json, TextWriter output, TextWriter error)
    {
        if (archive && files.Length != 1) throw new UsageException("--archive takes one archive directory");
        foreach (var file in files)
        {
            if (archive ? !Directory.Exists(file) : !File.Exists(file)) throw new InspectionException($"no {(archive ? "archive directory" : "backup file")} at {Path.GetFullPath(file)}");
        }
        var progress = ProgressBar.For(output, error);
        if (progress is not null && !archive && files.Length == 1) progress.TotalBytes = new FileInfo(files[0]).Length;
        var chain = archive ? StorageEnvironment.ArchiveChain(files[0], toTransaction) : files;
        var result = StorageEnvironment.RestoreAsync(chain, target, toTransaction, progress, compact: compact).GetAwaiter().GetResult();
        progress?.Clear();
        if (json)
        {
            Output.Json(output, new { directory = result.Directory, transactionId = result.TransactionId, pages = result.Pages, bytes = result.Bytes, seconds = result.Duration.TotalSeconds });
            return Cli.Ok;
        }
        output.WriteLine($"restored transaction {result.TransactionId}: {Output.N(result.Pages)} pages from {Output.Bytes(result.Bytes)} in {result.Duration.TotalSeconds:0.00} s -> {result.Directory} (checked: consistent)");
        return Cli.Ok;
    }

    private static int Archive(string directory, bool json, TextWriter output)
    {
        if (!Directory.Exists(directory)) throw new InspectionException($"no directory at {Path.GetFullPath(directory)}");
        var files = Directory.GetFiles(directory, "*" + StorageEnvironment.BackupFileExtension).Order(StringComparer.Ordinal).ToList();
        var rows = new List<(string Name, BackupDescription? Description, string? Problem)>();
        foreach (var file in files)
        {
            try
            {
                rows.Add((Path.GetFileName(file), StorageEnvironment.VerifyBackupAsync(file).GetAwaiter().GetResult(), null));
            }
            catch (StorageException e)
            {
                rows.Add((Path.GetFileName(file), null, e.Message));
            }
        }
        // Order: by the first transaction each holds, bases before the files that continue them.
        var ordered = rows.OrderBy(r => r.Description is { } d ? (d.BaseTransactionId ?? d.TransactionId) : long.MaxValue).ThenBy(r => r.Description?.IsIncremental).ToList();
        var notes = new List<string>();
        long? reach = null;
        foreach (var (name, description, problem) in ordered)
        {
            if (description is null) notes.Add($"{name}: damaged ({problem})");
            else if (!description.IsIncremental) reach = Math.Max(reach ?? -1, description.TransactionId);
            else if (reach is { } r && description.BaseTransactionId == r) reach = description.TransactionId;
            else notes.Add($"{name}: starts after transaction {description.BaseTransactionId}, where the chain before it reaches {(reach is { } at ? at.ToString(System.Globalization.CultureInfo.InvariantCulture) : "nothing (no base)")}: a gap");
        }
        if (json)
        {
            Output.Json(output, new
            {
                directory = Path.GetFullPath(directory),
                reaches = reach,
                files = ordered.Select(r => new
                {
                    file = r.Name,
                    kind = r.Description is null ? "damaged" : r.Description.IsIncremental ? "incremental" : "full",
                    after = r.Description?.BaseTransactionId,
                    through = r.Description?.TransactionId,
                    bytes = r.Description?.Bytes,
                    problem = r.Problem,
                }),
                problems = notes,
            });
            return notes.Count == 0 ? Cli.Ok : Cli.Problems;
        }
        Output.Table(output, ["file", "kind", "transactions", "bytes"], ordered.Select(r => new[]
        {
            r.Name,
            r.Description is null ? "damaged" : r.Description.IsIncremental ? "incremental" : "full",
            r.Description is null ? "-" : r.Description.IsIncremental ? $"{r.Description.BaseTransactionId + 1}-{r.Description.TransactionId}" : $"{r.Description.TransactionId}",
            r.Description is null ? "-" : Output.N(r.Description.Bytes),
        }));
        foreach (var note in notes) output.WriteLine(note);
        output.WriteLine(reach is { } end ? $"restores up to transaction {end}" : "no base: nothing to restore");
        return notes.Count == 0 ? Cli.Ok : Cli.Problems;
    }

    private static int Verify(string file, bool json, TextWriter output)
    {
        if (!File.Exists(file)) throw new InspectionException($"no backup file at {Path.GetFullPath(file)}");
        var description = StorageEnvironment.VerifyBackupAsync(file).GetAwaiter().GetResult();
        if (json)
        {
            Output.Json(output, new
            {
                file = Path.GetFullPath(file),
                environmentId = description.EnvironmentId.ToString("x16"),
                transactionId = description.TransactionId,
                takenAtUtc = description.TakenAtUtc,
                pages = description.Pages,
                nextPage = description.NextPageNumber,
                bytes = description.Bytes,
                dataFormat = description.DataFormatVersion,
            });
            return Cli.Ok;
        }
        if (description.IsIncremental)
        {
            output.WriteLine($"incremental backup of environment {description.EnvironmentId:x16}: transactions {description.BaseTransactionId + 1}-{description.TransactionId}, taken {description.TakenAtUtc:yyyy-MM-dd HH:mm:ss} UTC");
            output.WriteLine($"{Output.N(description.Pages)} journal entries, {Output.Bytes(description.Bytes)}");
        }
        else
        {
            output.WriteLine($"backup of environment {description.EnvironmentId:x16} at transaction {description.TransactionId}, taken {description.TakenAtUtc:yyyy-MM-dd HH:mm:ss} UTC");
            output.WriteLine($"{Output.N(description.Pages)} pages of {Output.N(description.NextPageNumber)} allocated, {Output.Bytes(description.Bytes)}, data format {description.DataFormatVersion}");
        }
        output.WriteLine("whole: every block's checksum and place, and the trailer, check out");
        return Cli.Ok;
    }
}
