using System.Diagnostics;
using System.Globalization;
using System.Text;
using Microsoft.Win32.SafeHandles;
using Storage.Benchmarks.Measurement;
using Storage.Paging;
using Storage.Platform;
using Storage.Scratch;

namespace Storage.Benchmarks.Flush;

/// <summary>
/// Flushing dirty pages to a data file, the way the environment's flusher does, through each backend:
/// the native ring (pages merged into writev calls, run by the process-wide io_uring writer), the managed
/// backend (RandomAccess vectored writes of merged runs), and one RandomAccess write per page. Each case
/// writes its pages and then fdatasyncs the file; the time covers both and nothing else: each file's writer is
/// made before the runs and kept across them, as the environment keeps one per data file. Then eight files
/// flushed at once, on threads started and ready before the clock: on the one shared ring, against eight
/// writers of their own.
/// Usage: --flush [--quick] [--repeat N].
/// </summary>
internal static class FlushBenchmark
{
    private const int PageSize = PageLayout.PageSizeBytes;

    public static int Run(string[] args, TextWriter output)
    {
        var quick = args.Contains("--quick");
        var repeat = ArgumentAfter(args, "--repeat") ?? (quick ? 3 : 7);
        var pageCount = quick ? 1_000 : 10_000;
        var root = RepositoryPaths.FindRoot();
        var directory = Path.Combine(RepositoryPaths.Scratch(root), "flush-" + Guid.NewGuid().ToString("N")[..8]);
        Directory.CreateDirectory(directory);
        var ring = Pal.SharedWriter(lowPriority: true, out var problem);
        if (ring is null) output.WriteLine($"The native ring is not available ({problem}): its rows are left out.");

        var report = new StringBuilder();
        report.AppendLine(CultureInfo.InvariantCulture, $"Flush of dirty pages, then fdatasync; median of {repeat} runs; {Environment.ProcessorCount} cores; files on the working tree's disk (results/tmp).");
        report.AppendLine();
        report.AppendLine("| case | backend | pages | write calls | writes done | with fdatasync | pages/s | vs per-page |");
        report.AppendLine("|---|---|--:|--:|--:|--:|--:|--:|");
        try
        {
            var random = new Random(42);
            var fileSpanPages = pageCount * 20L;
            var scattered = Scattered(random, pageCount, fileSpanPages);
            var clustered = Clustered(random, pageCount, fileSpanPages, clusterPages: 50);
            foreach (var (name, pages) in new[] { ("scattered", scattered), ("clustered", clustered) })
            {
                var buffers = Buffers(pages.Length);
                try
                {
                    var path = Path.Combine(directory, name);
                    using var handle = Prepare(path, fileSpanPages);
                    var list = pages.Select((page, i) => (page, buffers[i])).ToList();
                    var perPage = Measure(repeat, () => PerPage(handle, path, list));
                    Sample managed;
                    using (var writer = new ManagedDataFileWriter()) managed = Measure(repeat, () => WithSync(writer, handle, path, list));
                    Row(report, name, "RandomAccess, one write per page", pages.Length, perPage, perPage.Median);
                    Row(report, name, "managed (RandomAccess vectored runs)", pages.Length, managed, perPage.Median);
                    if (ring is not null)
                    {
                        Sample native;
                        using (var writer = new RingDataFileWriter(ring)) native = Measure(repeat, () => WithSync(writer, handle, path, list));
                        Row(report, name, "io_uring ring (merged writev)", pages.Length, native, perPage.Median);
                    }
                }
                finally
                {
                    foreach (var buffer in buffers) buffer.Release();
                }
            }

            // Eight environments flushing at once: the same scattered set each, in eight files.
            const int files = 8;
            var perFile = pageCount / 4;
            var sets = Enumerable.Range(0, files).Select(_ => Scattered(random, perFile, perFile * 20L)).ToArray();
            var allBuffers = sets.Select(set => Buffers(set.Length)).ToArray();
            try
            {
                var handles = Enumerable.Range(0, files).Select(f => Prepare(Path.Combine(directory, $"env-{f}"), perFile * 20L)).ToArray();
                try
                {
                    var lists = sets.Select((set, f) => set.Select((page, i) => (page, allBuffers[f][i])).ToList()).ToArray();
                    var label = $"{files} files at once";
                    var separate = Concurrently(repeat, files, () => new ManagedDataFileWriter(), handles, lists);
                    Row(report, label, $"{files} managed writers", files * perFile, separate, separate.Median);
                    if (ring is not null)
                    {
                        var shared = Concurrently(repeat, files, () => new RingDataFileWriter(ring), handles, lists);
                        Row(report, label, "one shared io_uring ring", files * perFile, shared, separate.Median);
                    }
                }
                finally
                {
                    foreach (var handle in handles) handle.Dispose();
                }
            }
            finally
            {
                foreach (var buffer in allBuffers.SelectMany(b => b)) buffer.Release();
            }
        }
        finally
        {
            Directory.Delete(directory, recursive: true);
        }
        if (ring is not null)
        {
            var stats = Pal.WriterStats(ring);
            report.AppendLine();
            report.AppendLine(CultureInfo.InvariantCulture, $"Ring totals: {stats.Submits} submits, {stats.Writes} writev, {stats.Syncs} fsyncs, {stats.ShortWrites} short writes, {stats.RingFullWaits} ring-full waits; I/O priority {(stats.PriorityError == 0 ? "best-effort 7" : $"not set (error {stats.PriorityError})")}.");
        }
        output.WriteLine();
        output.Write(report.ToString());
        if (!quick)
        {
            var path = Path.Combine(RepositoryPaths.Results(root), "flush.md");
            File.WriteAllText(path, "# Flush benchmark\n\n" + report);
            output.WriteLine($"Written to {path}");
        }
        return 0;
    }

    private readonly record struct Sample(double Median, double WriteMedian, long Calls);

    /// <summary>One flush: its write calls, when its writes (before the sync) ended, and when it ended, in milliseconds from its start.</summary>
    private readonly record struct Timing(long Calls, double WriteMs, double TotalMs);

    /// <summary>Runs a flush <paramref name="repeat"/> times after a warm-up; each flush times itself, its writer made beforehand.</summary>
    private static Sample Measure(int repeat, Func<Timing> flush)
    {
        flush(); // warm-up: the file's blocks are allocated, the writer's buffers sized and the code compiled
        var times = new double[repeat];
        var writeTimes = new double[repeat];
        long calls = 0;
        for (var i = 0; i < repeat; i++)
        {
            var timing = flush();
            (calls, writeTimes[i], times[i]) = (timing.Calls, timing.WriteMs, timing.TotalMs);
        }
        Array.Sort(times);
        Array.Sort(writeTimes);
        return new Sample(times[repeat / 2], writeTimes[repeat / 2], calls);
    }

    private static void Row(StringBuilder report, string name, string backend, int pages, Sample sample, double baseline)
    {
        var line = string.Create(CultureInfo.InvariantCulture,
            $"| {name} | {backend} | {pages:N0} | {sample.Calls:N0} | {sample.WriteMedian:0.0} ms | {sample.Median:0.0} ms | {pages / (sample.Median / 1000):N0} | {baseline / sample.Median:0.00}× |");
        report.AppendLine(line);
    }

    /// <summary>The pages through <paramref name="writer"/>, then its sync; the writer is the caller's (made and disposed outside the time).</summary>
    private static Timing WithSync(IDataFileWriter writer, SafeFileHandle handle, string path, List<(long, ScratchBuffer)> pages)
    {
        var start = Stopwatch.GetTimestamp();
        var calls = writer.Write(handle, path, pages, faults: null);
        var written = Stopwatch.GetElapsedTime(start).TotalMilliseconds;
        writer.Sync(handle, path, faults: null);
        return new Timing(calls, written, Stopwatch.GetElapsedTime(start).TotalMilliseconds);
    }

    private static unsafe Timing PerPage(SafeFileHandle handle, string path, List<(long Page, ScratchBuffer Buffer)> pages)
    {
        var start = Stopwatch.GetTimestamp();
        foreach (var (page, buffer) in pages) RandomAccess.Write(handle, new ReadOnlySpan<byte>(buffer.Pointer, PageSize), page * PageSize);
        var written = Stopwatch.GetElapsedTime(start).TotalMilliseconds;
        FileIo.SyncData(handle, path, faults: null);
        return new Timing(pages.Count, written, Stopwatch.GetElapsedTime(start).TotalMilliseconds);
    }

    /// <summary>
    /// The files flushed at once, one thread and one writer each (made before the runs, one per file as the environment
    /// keeps it): each run times from the common start, once every thread is ready, to the last thread's sync.
    /// </summary>
    private static Sample Concurrently(int repeat, int count, Func<IDataFileWriter> makeWriter,
        SafeFileHandle[] handles, List<(long, ScratchBuffer)>[] lists)
    {
        var writers = new List<IDataFileWriter>(count);
        try
        {
            for (var f = 0; f < count; f++) writers.Add(makeWriter());
            return Measure(repeat, () =>
            {
                var writeEnded = new long[count];
                var calls = new long[count];
                var group = ThreadGroup.Run(count, f => $"flush-{f}", f => new ThreadWork(() =>
                {
                    calls[f] = writers[f].Write(handles[f], $"env-{f}", lists[f], faults: null);
                    writeEnded[f] = Stopwatch.GetTimestamp();
                    writers[f].Sync(handles[f], $"env-{f}", faults: null);
                }));
                return new Timing(calls.Sum(), Stopwatch.GetElapsedTime(group.Start, writeEnded.Max()).TotalMilliseconds,
                    Stopwatch.GetElapsedTime(group.Start, group.LastEnded).TotalMilliseconds);
            });
        }
        finally
        {
            foreach (var made in writers) made.Dispose();
        }
    }

    private static SafeFileHandle Prepare(string path, long spanPages)
    {
        var handle = File.OpenHandle(path, FileMode.Create, FileAccess.ReadWrite);
        RandomAccess.SetLength(handle, spanPages * PageSize);
        return handle;
    }

    /// <summary>Distinct pages, no two adjacent, sorted.</summary>
    private static long[] Scattered(Random random, int count, long spanPages)
    {
        var chosen = new SortedSet<long>();
        while (chosen.Count < count)
        {
            var page = random.NextInt64(spanPages / 2) * 2;
            chosen.Add(page);
        }
        return [.. chosen];
    }

    /// <summary>Runs of <paramref name="clusterPages"/> adjacent pages at scattered places, sorted.</summary>
    private static long[] Clustered(Random random, int count, long spanPages, int clusterPages)
    {
        var clusters = count / clusterPages;
        var slots = spanPages / (clusterPages * 2);
        var starts = new SortedSet<long>();
        while (starts.Count < clusters) starts.Add(random.NextInt64(slots) * clusterPages * 2);
        return [.. starts.SelectMany(start => Enumerable.Range(0, clusterPages).Select(i => start + i))];
    }

    private static unsafe ScratchBuffer[] Buffers(int count)
    {
        var buffers = new ScratchBuffer[count];
        for (var i = 0; i < count; i++)
        {
            buffers[i] = new ScratchBuffer(1);
            Random.Shared.NextBytes(new Span<byte>(buffers[i].Pointer, PageSize));
        }
        return buffers;
    }

    private static int? ArgumentAfter(string[] args, string name)
    {
        var index = Array.IndexOf(args, name);
        return index >= 0 && index + 1 < args.Length && int.TryParse(args[index + 1], CultureInfo.InvariantCulture, out var value) ? value : null;
    }
}
