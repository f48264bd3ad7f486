using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;
using Storage.Paging;

namespace Storage.Benchmarks.Engines;

/// <summary>This project's engine, with default options (or options changed for one workload, W8).</summary>
internal sealed class StorageEngine(Func<StorageOptions, StorageOptions>? configure = null) : IHotBackupEngine
{
    public string Name => "storage";

    public long? DataFileBytes(string directory) => FileSizes.Of(Path.Combine(directory, DataFile.FileName));

    public string? UnavailableReason => null;

    public IEngineInstance Open(string directory, CommitMode mode = CommitMode.Durable) => new StorageEngineInstance(directory, mode, configure);

    /// <summary>An instance over an environment the caller opens with this engine's options (a member of an environment group).</summary>
    public StorageEngineInstance Open(Func<StorageOptions, StorageEnvironment> open) => new(open, CommitMode.Durable, configure);

    public string BackupMethod => "BackupAsync(directory): one backup file; RestoreAsync(file, directory), which checks the result";

    public string? TransactionName => "transaction";

    public RestoredBackup Restore(EngineBackup backup, string targetDirectory)
    {
        var file = Directory.GetFiles(backup.Directory, "*" + StorageEnvironment.BackupFileExtension).Single();
        var result = StorageEnvironment.RestoreAsync(file, targetDirectory).GetAwaiter().GetResult();
        return new RestoredBackup(result.TransactionId,
        [
            new("restore: pages / backup bytes read", $"{Format.Count(result.Pages)} / {Format.Bytes(result.Bytes)}"),
            new("restore: seconds as it reports them (its check included)", Format.Seconds(result.Duration.TotalSeconds)),
        ]);
    }

    public long? RestoredTransaction(string directory)
    {
        using var environment = StorageEnvironment.Open(directory, configure is null ? StorageOptions.Default : configure(StorageOptions.Default));
        using var transaction = environment.BeginRead();
        return transaction.TransactionId;
    }
}
