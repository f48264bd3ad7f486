using System.Diagnostics;

namespace Storage.Fuzz;

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
