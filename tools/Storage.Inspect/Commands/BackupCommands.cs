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
        var file = new Argument<string>("backup-file") { Description = "A backup file (full-<transaction>.storage-backup)." };
        var target = new Argument<string>("target") { Description = "The new environment's directory: missing or empty." };
        var json = Cli.JsonOption();
        var command = new Command("restore", "Restores a backup into a new directory; the result is checked before it is put in place, and nothing is left behind on failure.")
        {
            file,
            target,
            json,
        };
        command.SetAction(parse => Restore(parse.GetRequiredValue(file), parse.GetRequiredValue(target), parse.GetValue(json), parse.InvocationConfiguration.Output, parse.InvocationConfiguration.Error));
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

    private static int Restore(string file, string target, bool json, TextWriter output, TextWriter error)
    {
        if (!File.Exists(file)) throw new InspectionException($"no backup file at {Path.GetFullPath(file)}");
        var progress = ProgressBar.For(output, error);
        if (progress is not null) progress.TotalBytes = new FileInfo(file).Length;
        var result = StorageEnvironment.RestoreAsync(file, target, progress).GetAwaiter().GetResult();
        progress?.Clear();
        if (json)
        {
            Output.Json(output, new { directory = result.Directory, transactionId = result.TransactionId, pages = result.Pages, bytes = result.Bytes, seconds = result.Duration.TotalSeconds });
            return Cli.Ok;
        }
        output.WriteLine($"restored transaction {result.TransactionId}: {Output.N(result.Pages)} pages from {Output.Bytes(result.Bytes)} in {result.Duration.TotalSeconds:0.00} s -> {result.Directory} (checked: consistent)");
        return Cli.Ok;
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
        output.WriteLine($"backup of environment {description.EnvironmentId:x16} at transaction {description.TransactionId}, taken {description.TakenAtUtc:yyyy-MM-dd HH:mm:ss} UTC");
        output.WriteLine($"{Output.N(description.Pages)} pages of {Output.N(description.NextPageNumber)} allocated, {Output.Bytes(description.Bytes)}, data format {description.DataFormatVersion}");
        output.WriteLine("whole: every block's checksum and place, and the trailer, check out");
        return Cli.Ok;
    }
}
