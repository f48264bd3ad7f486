using System.Diagnostics;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W11 hot-backup: W1's fill (not measured), then the engine's own full hot backup taken while one writer thread commits
/// W1 transactions, then a restore of that backup into a new directory, all of one open engine.
/// </summary>
/// <remarks>
/// <para>The writer: one thread runs 2,000 more W1 transactions (100 random puts, durable, through the same commit as
/// W1, the key generator continued from the fill; 200 with <c>--quick</c>) and notes when each commit returns. Its
/// first half runs alone; the backup starts as soon as the first half is committed, on the workload's thread, and the
/// second half runs during it (and after it, when the backup ends first). Without the backup: the first half's
/// transactions over the time from the writer's start to its last commit. During the backup: the commits that returned
/// between the backup's start and its end, over that time (or over the time to the writer's last commit, when the writer
/// ran out first; the report says how much of the backup the writer covered). The commits after the backup are reported
/// too.</para>
/// <para>The backup is timed from its call until its files and directories are fsynced (each engine's own syncing, then
/// the same fsync of every file and directory for all). Its bytes are the files it left; next to it, a plain copy of
/// as many bytes, read from the engine's files (largest first) once the engine is closed, each read once before so that
/// they come from the page cache for every engine, and written into one new file beside the backup through a 1 MiB
/// buffer, then fsynced. The MB/s of both (10^6 bytes), and their ratio.</para>
/// <para>The restore is timed from its call until the new directory is fsynced: storage's RestoreAsync (which checks what
/// it built), RocksDB's backup engine restore, and for LMDB and SQLite, whose backups are databases of their own, a
/// copy of the backup's file into the new directory. Then it is verified, not timed: the engine's number of the restored
/// state (storage: equal to the backup's transaction), and, opened as the workloads open it, a scan counting every entry
/// and a get of every key: the fill's, the writer's transactions up to the backup's point all there, and none after, so
/// the backup holds whole transactions, at least those committed before it started. Anything else fails the workload.</para>
/// <para>Rows: the writer's tx/s during the backup, the backup's MB/s, and the restore's MB/s (backup bytes over its
/// seconds).</para>
/// </remarks>
internal sealed class HotBackup : IWorkload
{
    private const string BackupKey = "W11-backup";
    private const string RestoreKey = "W11-restore";
    private const double BytesPerMegabyte = 1_000_000;

    public string Id => "W11";

    public string Name => "hot-backup";

    public IReadOnlyList<WorkloadRow> Rows { get; } =
    [
        new("W11", "W11 hot-backup: one writer during the backup", "tx/s"),
        new(BackupKey, "W11-backup: full hot backup", "MB/s"),
        new(RestoreKey, "W11-restore: restore of the backup", "MB/s"),
    ];

    /// <summary>The writer's transactions: 2,000 (200 with <c>--quick</c>).</summary>
    public static int WriterTransactions(WorkloadCounts counts) => counts.Transactions / 5;

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        if (engine is not IHotBackupEngine backups) return [.. Rows.Select(row => RowResult.Note(row.Key, "n/a: no hot backup"))];
        var counts = context.Counts;
        var puts = counts.PutsPerTransaction;
        var writerTransactions = WriterTransactions(counts);
        var alone = writerTransactions / 2;
        var directory = context.FreshDirectory(engine, Id);
        var backupDirectory = context.FreshDirectory(engine, $"{Id}-backup");

        var keys = new RandomKeySource();
        var values = new ValueSource();
        var batch = new KeyValueBatch(puts);
        var committedAt = new long[writerTransactions];
        long writerStart = 0, backupStart = 0, backupReturned = 0, backupEnd = 0;
        double fillSeconds;
        EngineBackup backup;
        var instance = engine.Open(directory);
        try
        {
            if (instance is not IHotBackupInstance source) throw new InvalidOperationException($"{engine.Name} opened an instance without a hot backup.");
            var clock = Stopwatch.StartNew();
            for (var tx = 0; tx < counts.Transactions; tx++)
            {
                batch.Fill(keys, values, puts);
                instance.Commit(batch);
            }
            fillSeconds = clock.Elapsed.TotalSeconds;

            using var firstHalfCommitted = new ManualResetEventSlim();
            Exception? writerFailure = null;
            var writer = new Thread(() =>
            {
                try
                {
                    writerStart = Stopwatch.GetTimestamp();
                    for (var i = 0; i < writerTransactions; i++)
                    {
                        batch.Fill(keys, values, puts);
                        instance.Commit(batch);
                        committedAt[i] = Stopwatch.GetTimestamp();
                        if (i + 1 == alone) firstHalfCommitted.Set();
                    }
                }
                catch (Exception e)
                {
                    writerFailure = e;
                }
                finally
                {
                    firstHalfCommitted.Set();
                }
            })
            {
                IsBackground = true,
                Name = $"{Id}-writer-{engine.Name}",
            };
            writer.Start();
            firstHalfCommitted.Wait();
            try
            {
                if (writerFailure is not null) throw new InvalidOperationException($"The writer failed before the backup: {writerFailure.Message}", writerFailure);
                backupStart = Stopwatch.GetTimestamp();
                backup = source.Backup(backupDirectory);
                backupReturned = Stopwatch.GetTimestamp();
                DurableFiles.SyncTree(backupDirectory);
                backupEnd = Stopwatch.GetTimestamp();
            }
            finally
            {
                writer.Join();
            }
            if (writerFailure is not null) throw new InvalidOperationException($"The writer failed: {writerFailure.Message}", writerFailure);
        }
        catch
        {
            try
            {
                instance.Dispose();
            }
            catch (Exception)
            {
                // The workload's exception is the one to report.
            }
            throw;
        }
        instance.Dispose();

        var backupSeconds = Stopwatch.GetElapsedTime(backupStart, backupEnd).TotalSeconds;
        var backupBytes = FileSizes.OfDirectory(backupDirectory);

        // The plain copy: as many bytes, from the engine's (closed) files, read once first so that they come from the page
        // cache whether or not the engine wrote them through it, as the backup read what was just written.
        PageCache.LoadDirectory(directory);
        var copyDirectory = context.FreshDirectory(engine, $"{Id}-copy");
        var copyClock = Stopwatch.StartNew();
        DurableFiles.CopyBytes(directory, backupBytes, Path.Combine(copyDirectory, "plain-copy"));
        var copySeconds = copyClock.Elapsed.TotalSeconds;
        context.Discard(copyDirectory);

        // A new directory, which the restore makes.
        var restoreDirectory = context.FreshDirectory(engine, $"{Id}-restore");
        Directory.Delete(restoreDirectory);
        var restoreClock = Stopwatch.StartNew();
        var restored = backups.Restore(backup, restoreDirectory);
        DurableFiles.SyncTree(restoreDirectory);
        var restoreSeconds = restoreClock.Elapsed.TotalSeconds;
        var restoredBytes = FileSizes.OfDirectory(restoreDirectory);

        // The writer's rates, from when each commit returned.
        var firstHalfSeconds = Stopwatch.GetElapsedTime(writerStart, committedAt[alone - 1]).TotalSeconds;
        var writerEnd = committedAt[^1];
        var windowEnd = Math.Min(backupEnd, writerEnd);
        var windowSeconds = Stopwatch.GetElapsedTime(backupStart, windowEnd).TotalSeconds;
        var beforeBackup = committedAt.Count(at => at <= backupStart);
        var duringBackup = committedAt.Count(at => at > backupStart && at <= windowEnd);
        var afterBackup = committedAt.Count(at => at > backupEnd);
        var aloneRate = alone / firstHalfSeconds;
        var duringRate = windowSeconds > 0 ? duringBackup / windowSeconds : 0;
        var afterSeconds = Stopwatch.GetElapsedTime(backupEnd, writerEnd).TotalSeconds;
        // A commit that had not returned when the backup ended may still be in it: it was visible before it returned.
        var maxIncluded = Math.Min(writerTransactions, committedAt.Count(at => at <= backupEnd) + 1);

        var dataFileBytes = engine.DataFileBytes(directory);
        var (transaction, included, verified) = Verify(engine, backups, backup, restored, restoreDirectory, counts, writerTransactions, beforeBackup, maxIncluded);
        context.Discard(restoreDirectory);
        context.Discard(backupDirectory);
        context.Discard(directory);

        var backupRate = backupBytes / BytesPerMegabyte / backupSeconds;
        var copyRate = backupBytes / BytesPerMegabyte / copySeconds;
        var restoreRate = backupBytes / BytesPerMegabyte / restoreSeconds;
        var writerFigures = new List<Figure>
        {
            new("fill: seconds / tx/s (not compared)", $"{Format.Seconds(fillSeconds)} / {Format.Rate(counts.Transactions / fillSeconds)}"),
            new("writer: transactions (alone, then from the backup's start)", $"{Format.Count(writerTransactions)} ({Format.Count(alone)}, then {Format.Count(writerTransactions - alone)})"),
            new("writer tx/s without a backup (its first half)", Format.Rate(aloneRate)),
            new("writer tx/s during the backup", Format.Rate(duringRate)),
            new("writer during / without the backup", Format.Ratio(duringRate / aloneRate)),
            new("writer commits during the backup", Format.Count(duringBackup)),
            new("share of the backup the writer ran through", writerEnd >= backupEnd ? "all" : $"{Format.Decimal(100 * windowSeconds / backupSeconds)} % (the writer finished first)"),
            new("writer tx/s after the backup", afterBackup > 0 && afterSeconds > 0 ? $"{Format.Rate(afterBackup / afterSeconds)} ({Format.Count(afterBackup)} commits)" : "none after it"),
            new($"backup's {backups.TransactionName ?? "transaction"}", transaction),
            new("writer transactions in the backup (committed before it started / by its end)", $"{Format.Count(included)} ({Format.Count(beforeBackup)} / {Format.Count(maxIncluded)})"),
            new("restore verified", verified),
        };
        List<Figure> backupFigures =
        [
            new("backup: method", backups.BackupMethod),
            new("backup: seconds", Format.Seconds(backupSeconds)),
            new("backup: seconds in the engine's call / in the fsync of its files after", $"{Format.Seconds(Stopwatch.GetElapsedTime(backupStart, backupReturned).TotalSeconds)} / {Format.Seconds(Stopwatch.GetElapsedTime(backupReturned, backupEnd).TotalSeconds)}"),
            new("backup: bytes", Format.Bytes(backupBytes)),
            new("backup: MB/s", Format.Rate(backupRate)),
            new("plain copy of as many bytes: seconds", Format.Seconds(copySeconds)),
            new("plain copy: MB/s", Format.Rate(copyRate)),
            new("backup / plain copy (MB/s)", Format.Ratio(backupRate / copyRate)),
            new("backup bytes / data file size", dataFileBytes is { } file && file > 0 ? Format.Ratio((double)backupBytes / file) : "n/a"),
            .. backup.Figures,
        ];
        List<Figure> restoreFigures =
        [
            new("restore: seconds", Format.Seconds(restoreSeconds)),
            new("restore: MB/s (backup bytes)", Format.Rate(restoreRate)),
            new("restored directory: bytes", Format.Bytes(restoredBytes)),
            .. restored.Figures,
        ];
        return
        [
            windowSeconds > 0
                ? new RowResult(Id, duringRate, writerFigures)
                : RowResult.Note(Id, "n/a: the writer finished before the backup started", writerFigures),
            new RowResult(BackupKey, backupRate, backupFigures),
            new RowResult(RestoreKey, restoreRate, restoreFigures),
        ];
    }

    /// <summary>
    /// Checks the restored directory: its number of the state equal to the backup's where both say, and, opened, every key
    /// of the fill and of the writer's first transactions present and none of the later ones, the number of them between
    /// <paramref name="minIncluded"/> and <paramref name="maxIncluded"/>. Returns the backup's number (text), the writer
    /// transactions it holds, and what was checked.
    /// </summary>
    private static (string Transaction, long Included, string Verified) Verify(IEngine engine, IHotBackupEngine backups, EngineBackup backup, RestoredBackup restored,
        string directory, WorkloadCounts counts, int writerTransactions, long minIncluded, long maxIncluded)
    {
        var restoredTransaction = backups.RestoredTransaction(directory);
        if (backup.Transaction is { } taken)
        {
            if (restored.Transaction is { } said && said != taken)
                throw new WorkloadCheckException($"The backup is of transaction {taken}, but its restore says it restored transaction {said}.");
            if (restoredTransaction != taken)
                throw new WorkloadCheckException($"The backup is of transaction {taken}, but the restored directory opens at transaction {restoredTransaction}.");
        }
        var transaction = (backup.Transaction ?? restoredTransaction) is { } number
            ? Format.Count(number) + (backup.Transaction is not null ? " (the restored directory's too)" : " (the restored directory's)")
            : "n/a: not numbered";

        var puts = counts.PutsPerTransaction;
        var filled = counts.FilledKeys;
        using var instance = engine.Open(directory);
        using var reader = instance.BeginRead();
        var entries = reader.Scan();
        var writerKeys = entries - filled;
        if (writerKeys < minIncluded * puts || writerKeys > maxIncluded * puts || writerKeys % puts != 0)
        {
            throw new WorkloadCheckException(
                $"The restored backup holds {entries} entries: expected the fill's {filled} and the puts of whole writer transactions, " +
                $"at least {minIncluded} (committed before the backup started) and at most {maxIncluded}.");
        }
        var included = writerKeys / puts;
        var keys = new RandomKeySource();
        Span<byte> key = stackalloc byte[KeyFormat.KeySizeBytes];
        for (long i = 0; i < entries; i++)
        {
            keys.Next(key);
            if (!reader.TryGet(key, out var length) || length != ValueSource.ValueSizeBytes)
            {
                throw new WorkloadCheckException(i < filled
                    ? $"The restored backup lacks key {i} of the fill (or its value is not {ValueSource.ValueSizeBytes} bytes)."
                    : $"The restored backup lacks key {i - filled} of the writer's first {included} transactions (or its value is not {ValueSource.ValueSizeBytes} bytes).");
            }
        }
        for (var i = included * puts; i < (long)writerTransactions * puts; i++)
        {
            keys.Next(key);
            if (reader.TryGet(key, out _))
                throw new WorkloadCheckException($"The restored backup holds key {i} of the writer, of transaction {i / puts}, after the {included} whole ones it holds.");
        }
        var verified = $"{Format.Count(entries)} entries, every key of the fill and of the writer's first {Format.Count(included)} transactions, none later" +
            (backup.Transaction is not null ? ", transaction as backed up" : "");
        return (transaction, included, verified);
    }
}
