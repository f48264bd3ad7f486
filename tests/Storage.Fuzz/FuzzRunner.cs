using System.Diagnostics;

namespace Storage.Fuzz;

/// <summary>What one input did: an outcome within the contract, or the violation (an untyped exception or a timeout).</summary>
internal sealed record FuzzResult(FuzzOutcome? Outcome, Exception? Violation, bool TimedOut, TimeSpan Elapsed)
{
    /// <summary>The typed errors the target's steps met (see <see cref="FuzzContract.Step"/>).</summary>
    public IReadOnlyList<string> Refusals { get; init; } = [];

    public bool KeepsContract => Violation is null && !TimedOut;

    public string Describe() => TimedOut ? $"TIMEOUT after {Elapsed.TotalSeconds:F1} s"
        : Violation is not null ? $"VIOLATION {Violation.GetType().FullName}: {Violation.Message}"
        : $"{Outcome}, {Refusals.Count} refusals ({Elapsed.TotalMilliseconds:F0} ms)";
}

/// <summary>Runs targets in this process with a watchdog, for replays and the mutation pass (AFL++ runs them through SharpFuzz instead).</summary>
internal static class FuzzRunner
{
    public static readonly TimeSpan DefaultTimeout = TimeSpan.FromSeconds(20);

    public static FuzzResult RunOne(FuzzTarget target, byte[] input, TimeSpan? timeout = null)
    {
        var watch = Stopwatch.StartNew();
        // Its own thread, so that a hang is reported instead of stopping the caller; the thread is abandoned then.
        var task = Task.Factory.StartNew(() => (FuzzContract.Execute(target, input), FuzzContract.Refusals.ToList()), CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        if (!((IAsyncResult)task).AsyncWaitHandle.WaitOne(timeout ?? DefaultTimeout))
        {
            return new FuzzResult(null, null, TimedOut: true, watch.Elapsed);
        }
        return task.IsFaulted
            ? new FuzzResult(null, task.Exception!.InnerException, false, watch.Elapsed)
            : new FuzzResult(task.Result.Item1, null, false, watch.Elapsed) { Refusals = task.Result.Item2 };
    }
}
