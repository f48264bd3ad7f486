using System.Globalization;
using System.Text.RegularExpressions;

namespace Storage.Backup;

/// <summary>
/// The continuous archive (<see cref="StorageOptions.ArchiveDirectory"/>): a full backup as its base, then, every
/// <see cref="StorageOptions.ArchiveInterval"/>, the entries made durable since as one incremental backup file, so that
/// the archive directory always holds a chain that restores to any transaction it reached
/// (<see cref="StorageEnvironment.RestoreAsync(IReadOnlyList{string}, string, long?, IProgress{RestoreProgress}, CancellationToken, bool)"/>).
/// </summary>
/// <remarks>
/// <para>It runs on a thread of its own and never blocks a commit, unless <see cref="StorageOptions.ArchiveMaxLagTransactions"/>
/// says to refuse commits once the archive is that far behind. A failure (a full archive disk, say) is counted and kept
/// in <see cref="ArchiveActivity.LastError"/>, and the next round tries again from where the archive is. When the
/// journal no longer holds an entry the archive needs (it fell behind by more than the files kept,
/// <see cref="StorageOptions.RetainedJournalBytes"/>), the archive takes a new full backup as a new base and counts a
/// gap: transactions between the two bases can then only be restored up to the old chain's end.</para>
/// <para>On open it continues from the newest file in the directory, so an archive carries on across restarts without a
/// gap as long as the journal still holds the entries after it. At dispose, the last entries are shipped before the
/// environment closes.</para>
/// </remarks>
internal sealed partial class Archiver : IDisposable
{
    private readonly StorageEnvironment _environment;
    private readonly string _directory;
    private readonly TimeSpan _interval;
    private readonly ManualResetEventSlim _wake = new(false);
    private readonly object _shipLock = new();
    private Thread? _thread;
    private volatile bool _stopping;
    private long _archivedThrough = -1;
    private long _segments;
    private long _bases;
    private long _gaps;
    private long _failures;
    private long _bytes;
    private string? _lastError;

    public Archiver(StorageEnvironment environment, string directory, TimeSpan interval)
    {
        _environment = environment;
        _directory = Path.GetFullPath(directory);
        _interval = interval;
        Directory.CreateDirectory(_directory);
        _archivedThrough = NewestArchived(_directory, environment.EnvironmentId);
    }

    /// <summary>The last transaction the archive holds (-1 before its first base).</summary>
    public long ArchivedThrough => Interlocked.Read(ref _archivedThrough);

    public ArchiveActivity Snapshot(long lastDurable) => new()
    {
        Directory = _directory,
        ArchivedThroughTransactionId = ArchivedThrough,
        LagTransactions = Math.Max(0, lastDurable - Math.Max(ArchivedThrough, 0)),
        Segments = Interlocked.Read(ref _segments),
        Bases = Interlocked.Read(ref _bases),
        Gaps = Interlocked.Read(ref _gaps),
        Failures = Interlocked.Read(ref _failures),
        Bytes = Interlocked.Read(ref _bytes),
        LastError = Volatile.Read(ref _lastError),
    };

    public void Start()
    {
        _thread = new Thread(Run) { IsBackground = true, Name = "storage-archiver" };
        _thread.Start();
    }

    private void Run()
    {
        while (!_stopping)
        {
            ShipOnce(takeBase: true);
            _wake.Wait(_interval);
            _wake.Reset();
        }
    }

    /// <summary>
    /// Ships what is durable and not archived yet: a base when there is none (or the chain broke) and
    /// <paramref name="takeBase"/> allows, else one incremental file. Never throws.
    /// </summary>
    public void ShipOnce(bool takeBase)
    {
        lock (_shipLock)
        {
            try
            {
                var durable = _environment.Journal.DurableTransactionId;
                var archived = ArchivedThrough;
                if (archived >= 0 && durable <= archived) return;
                BackupResult result;
                if (archived < 0 || archived > durable)
                {
                    if (!takeBase) return;
                    result = TakeBase();
                }
                else
                {
                    try
                    {
                        result = _environment.WriteIncrementalBackupFileAsync(_directory, archived, progress: null, CancellationToken.None).GetAwaiter().GetResult();
                        Interlocked.Increment(ref _segments);
                    }
                    catch (StorageException e) when (e.ErrorCode == StorageErrorCode.BackupChainBroken)
                    {
                        Interlocked.Increment(ref _gaps);
                        Volatile.Write(ref _lastError, $"gap after transaction {archived}: {e.Message}");
                        if (!takeBase) return;
                        result = TakeBase();
                    }
                }
                Interlocked.Add(ref _bytes, result.Bytes);
                Interlocked.Exchange(ref _archivedThrough, result.TransactionId);
            }
            catch (Exception e) when (e is StorageException or IOException or UnauthorizedAccessException)
            {
                Interlocked.Increment(ref _failures);
                Volatile.Write(ref _lastError, e.Message);
            }
        }
    }

    private BackupResult TakeBase()
    {
        var result = _environment.WriteFullBackupFileAsync(_directory, progress: null, CancellationToken.None).GetAwaiter().GetResult();
        Interlocked.Increment(ref _bases);
        return result;
    }

    /// <summary>Stops the thread and ships the last durable entries (called with the writers stopped, before the journal closes).</summary>
    public void Stop()
    {
        _stopping = true;
        _wake.Set();
        _thread?.Join();
        ShipOnce(takeBase: false);
    }

    /// <summary>Stops the thread without shipping: what a killed process leaves.</summary>
    public void Abandon()
    {
        _stopping = true;
        _wake.Set();
        _thread?.Join();
    }

    public void Dispose() => _wake.Dispose();

    /// <summary>
    /// The newest transaction the files in <paramref name="directory"/> reach, from their names; -1 when it holds none.
    /// A newest file of another environment is refused: an archive directory belongs to one environment.
    /// </summary>
    private static long NewestArchived(string directory, ulong environmentId)
    {
        long newest = -1;
        string? newestFile = null;
        foreach (var file in Directory.EnumerateFiles(directory, "*" + StorageEnvironment.BackupFileExtension))
        {
            var match = ArchiveName().Match(Path.GetFileName(file));
            if (!match.Success) continue;
            var end = long.Parse(match.Groups["end"].Value, CultureInfo.InvariantCulture);
            if (end <= newest) continue;
            newest = end;
            newestFile = file;
        }
        if (newestFile is null) return -1;
        var description = StorageEnvironment.VerifyBackupAsync(newestFile).GetAwaiter().GetResult();
        if (description.EnvironmentId != environmentId)
        {
            throw new StorageException(StorageErrorCode.NotAnEnvironment,
                $"The archive directory '{directory}' holds backups of environment {description.EnvironmentId:x16}, not of this one ({environmentId:x16}). Give each environment its own archive directory.",
                newestFile, 0);
        }
        return newest;
    }

    [GeneratedRegex(@"^(full-(?<end>\d{20})|incr-\d{20}-(?<end>\d{20}))\.storage-backup$", RegexOptions.CultureInvariant)]
    private static partial Regex ArchiveName();

    /// <summary>
    /// The newest transaction an archive file of <paramref name="directory"/> reached when it was taken at or before
    /// <paramref name="timeUtc"/> (its header says when): every transaction in it was durable by then.
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException">No file of the archive was taken by then.</exception>
    public static long TransactionAt(string directory, DateTime timeUtc)
    {
        long best = -1;
        foreach (var file in Directory.EnumerateFiles(directory, "*" + StorageEnvironment.BackupFileExtension))
        {
            var match = ArchiveName().Match(Path.GetFileName(file));
            if (!match.Success) continue;
            var end = long.Parse(match.Groups["end"].Value, CultureInfo.InvariantCulture);
            if (end <= best) continue;
            var header = new byte[BackupFormat.HeaderBytes];
            using (var stream = new FileStream(file, FileMode.Open, FileAccess.Read, FileShare.Read))
            {
                if (stream.ReadAtLeast(header, header.Length, throwOnEndOfStream: false) < header.Length) continue;
            }
            if (BackupFormat.TryReadHeader(header, out var parsed, out _) && parsed.TakenAtUtc <= timeUtc.ToUniversalTime()) best = end;
        }
        if (best < 0) throw new ArgumentOutOfRangeException(nameof(timeUtc), timeUtc, $"The archive '{directory}' has no file taken at or before {timeUtc.ToUniversalTime():O}.");
        return best;
    }

    /// <summary>
    /// The files of <paramref name="directory"/> that restore to <paramref name="transactionId"/> (or, when null, as far
    /// as the newest base's chain goes): the newest base at or before it and the incremental files after it, in order.
    /// </summary>
    public static IReadOnlyList<string> ChainFor(string directory, long? transactionId)
    {
        var files = Directory.EnumerateFiles(directory, "*" + StorageEnvironment.BackupFileExtension)
            .Select(f => (Path: f, Match: ArchiveName().Match(Path.GetFileName(f))))
            .Where(f => f.Match.Success)
            .Select(f => (f.Path, IsFull: f.Match.Value.StartsWith("full-", StringComparison.Ordinal), End: long.Parse(f.Match.Groups["end"].Value, CultureInfo.InvariantCulture),
                Start: f.Match.Value.StartsWith("incr-", StringComparison.Ordinal) ? long.Parse(f.Match.Value.AsSpan(5, 20), CultureInfo.InvariantCulture) - 1 : -1))
            .ToList();
        var wanted = transactionId ?? long.MaxValue;
        var bases = files.Where(f => f.IsFull && f.End <= wanted).OrderByDescending(f => f.End).ToList();
        if (bases.Count == 0) throw new ArgumentOutOfRangeException(nameof(transactionId), transactionId, $"The archive '{directory}' has no base at or before transaction {wanted}.");
        var chain = new List<string> { bases[0].Path };
        var end = bases[0].End;
        while (end < wanted)
        {
            var next = files.Where(f => !f.IsFull && f.Start == end).OrderByDescending(f => f.End).FirstOrDefault();
            if (next.Path is null)
            {
                if (transactionId is null) break;
                throw new ArgumentOutOfRangeException(nameof(transactionId), transactionId, $"The archive '{directory}' reaches transaction {end} from its base at {bases[0].End}, not {transactionId}.");
            }
            chain.Add(next.Path);
            end = next.End;
        }
        return chain;
    }
}
