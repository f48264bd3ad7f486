using System.Diagnostics;

namespace Storage.Backup;

/// <summary>
/// Holds a backup to a number of bytes a second (<see cref="StorageOptions.BackupBytesPerSecond"/>): after each block,
/// it waits until the time the bytes so far are due at that rate, counted from the backup's start.
/// </summary>
internal readonly struct RateLimit(long bytesPerSecond, long startedTimestamp)
{
    /// <summary>Ahead by less than this, it goes on: a timer's wait is not finer.</summary>
    private static readonly TimeSpan MinimumWait = TimeSpan.FromMilliseconds(2);

    /// <summary>Waits until <paramref name="bytesSoFar"/> are due; at once without a limit or when behind.</summary>
    public ValueTask WaitAsync(long bytesSoFar, CancellationToken cancellationToken)
    {
        if (bytesPerSecond <= 0) return ValueTask.CompletedTask;
        var due = TimeSpan.FromSeconds((double)bytesSoFar / bytesPerSecond);
        var ahead = due - Stopwatch.GetElapsedTime(startedTimestamp);
        return ahead < MinimumWait ? ValueTask.CompletedTask : new ValueTask(Task.Delay(ahead, cancellationToken));
    }
}
