using System.Diagnostics;
using System.Runtime.ExceptionServices;

namespace Storage.Benchmarks.Measurement;

/// <summary>
/// What one thread of a <see cref="ThreadGroup"/> does after the common start (<paramref name="Run"/>, timed),
/// and what it releases on the same thread afterwards (<paramref name="Release"/>, not timed; also after a
/// failed run).
/// </summary>
internal readonly record struct ThreadWork(Action Run, Action? Release = null);

/// <summary>
/// Threads started together: each prepares on its own thread (readers, writers, generators), signals ready,
/// and waits; once all are ready the common start is taken and they are let go. A thread signals ready exactly
/// once whether its preparation returned or threw, so the wait cannot hang on a failed preparation; when one
/// failed, no thread runs. All threads are joined, then the first failure (by thread index) is rethrown with
/// its own type and stack, so the report names the engine's exception.
/// </summary>
internal sealed class ThreadGroup
{
    private readonly long[] _started;
    private readonly long[] _ended;

    private ThreadGroup(long start, long[] started, long[] ended)
    {
        Start = start;
        _started = started;
        _ended = ended;
    }

    /// <summary>The common start: the <see cref="Stopwatch"/> timestamp taken after all were ready, just before they were let go.</summary>
    public long Start { get; }

    /// <summary>Each thread's timestamp when its run began (after the common start).</summary>
    public IReadOnlyList<long> Started => _started;

    /// <summary>Each thread's timestamp when its run returned (before its release).</summary>
    public IReadOnlyList<long> Ended => _ended;

    /// <summary>When the first thread began its run.</summary>
    public long FirstStarted => _started.Min();

    /// <summary>When the last thread's run returned.</summary>
    public long LastEnded => _ended.Max();

    /// <summary>
    /// Runs <paramref name="count"/> threads named by <paramref name="name"/>: each calls <paramref name="prepare"/>
    /// with its index and, after the common start, the run it returned. <paramref name="atStart"/> runs on the calling
    /// thread once all are ready, just before the common start (a device counter's first snapshot, say). Returns once
    /// every thread has ended.
    /// </summary>
    public static ThreadGroup Run(int count, Func<int, string> name, Func<int, ThreadWork> prepare, Action? atStart = null)
    {
        var failures = new Exception?[count];
        var started = new long[count];
        var ended = new long[count];
        var cancelled = false;
        long start = 0;
        var threads = new List<Thread>(count);
        using var ready = new CountdownEvent(count);
        using var go = new ManualResetEventSlim();

        void Body(int index)
        {
            ThreadWork? work = null;
            try
            {
                work = prepare(index);
            }
            catch (Exception e)
            {
                failures[index] = e;
            }
            finally
            {
                // The failure is stored before the signal, so the waiting thread sees it.
                ready.Signal();
            }
            try
            {
                go.Wait();
                if (work is { } toRun && !cancelled)
                {
                    started[index] = Stopwatch.GetTimestamp();
                    toRun.Run();
                    ended[index] = Stopwatch.GetTimestamp();
                }
            }
            catch (Exception e)
            {
                failures[index] = e;
            }
            try
            {
                work?.Release?.Invoke();
            }
            catch (Exception e)
            {
                failures[index] ??= e;
            }
        }

        try
        {
            for (var i = 0; i < count; i++)
            {
                var index = i;
                var thread = new Thread(() => Body(index)) { IsBackground = true, Name = name(index) };
                thread.Start();
                threads.Add(thread);
            }
            ready.Wait();
            if (Array.Exists(failures, failure => failure is not null))
            {
                cancelled = true;
            }
            else
            {
                atStart?.Invoke();
                start = Stopwatch.GetTimestamp();
            }
        }
        catch
        {
            // A thread that could not be started, or a failed atStart: the started threads are let go without running.
            cancelled = true;
            throw;
        }
        finally
        {
            go.Set();
            foreach (var thread in threads) thread.Join();
        }
        if (Array.Find(failures, failure => failure is not null) is { } failed) ExceptionDispatchInfo.Capture(failed).Throw();
        return new ThreadGroup(start, started, ended);
    }
}
