using System.Diagnostics;
using System.Globalization;
using System.Text;
using Microsoft.Win32.SafeHandles;
using Storage.Paging;
using Storage.Platform;

namespace Storage.Benchmarks.Flush;

/// <summary>
/// Flushing dirty pages to a data file, the way the environment's flusher does, through each backend:
/// the native ring (pages merged into writev calls, run by the process-wide io_uring writer), the managed
/// backend (RandomAccess vectored writes of merged runs), and one RandomAccess write per page. Each case
/// writes its pages and then fdatasyncs the file; the time covers both. Then eight files flushed at once:
/// on the one shared ring, against eight writers of their own.
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
                    var perPage = Measure(repeat, watch => PerPage(handle, path, list, watch));
                    var managed = Measure(repeat, watch => WithSync(new ManagedDataFileWriter(), handle, path, list, watch));
                    Row(report, name, "RandomAccess, one write per page", pages.Length, perPage, perPage.Median);
                    Row(report, name, "managed (RandomAccess vectored runs)", pages.Length, managed, perPage.Median);
                    if (ring is not null)
                    {
                        var native = Measure(repeat, watch => WithSync(new RingDataFileWriter(ring), handle, path, list, watch));
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
                    var separate = Measure(repeat, watch => Concurrently(files, watch, f => WithSync(new ManagedDataFileWriter(), handles[f], $"env-{f}", lists[f], watch)));
                    Row(report, label, $"{files} managed writers", files * perFile, separate, separate.Median);
                    if (ring is not null)
                    {
                        var shared = Measure(repeat, watch => Concurrently(files, watch, f => WithSync(new RingDataFileWriter(ring), handles[f], $"env-{f}", lists[f], watch)));
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

    /// <summary>Runs a flush <paramref name="repeat"/> times after a warm-up; the flush reports its write calls and when its writes (before the sync) ended.</summary>
    private static Sample Measure(int repeat, Func<Stopwatch, (long Calls, double WriteMs)> flush)
    {
        flush(Stopwatch.StartNew()); // warm-up: the file's blocks are allocated and the code is compiled
        var times = new double[repeat];
        var writeTimes = new double[repeat];
        long calls = 0;
        for (var i = 0; i < repeat; i++)
        {
            var watch = Stopwatch.StartNew();
            (calls, writeTimes[i]) = flush(watch);
            times[i] = watch.Elapsed.TotalMilliseconds;
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

    private static (long, double) WithSync(IDataFileWriter writer, SafeFileHandle handle, string path, List<(long, ScratchBuffer)> pages, Stopwatch watch)
    {
        using (writer)
        {
            var calls = writer.Write(handle, path, pages, faults: null);
            var written = watch.Elapsed.TotalMilliseconds;
            writer.Sync(handle, path, faults: null);
            return (calls, written);
        }
    }

    private static unsafe (long, double) PerPage(SafeFileHandle handle, string path, List<(long Page, ScratchBuffer Buffer)> pages, Stopwatch watch)
    {
        foreach (var (page, buffer) in pages) RandomAccess.Write(handle, new ReadOnlySpan<byte>(buffer.Pointer, PageSize), page * PageSize);
        var written = watch.Elapsed.TotalMilliseconds;
        FileIo.SyncData(handle, path, faults: null);
        return (pages.Count, written);
    }

    private static (long, double) Concurrently(int count, Stopwatch watch, Func<int, (long Calls, double WriteMs)> flush)
    {
        var results = new (long Calls, double WriteMs)[count];
        var threads = Enumerable.Range(0, count).Select(f => new Thread(() => results[f] = flush(f))).ToArray();
        foreach (var thread in threads) thread.Start();
        foreach (var thread in threads) thread.Join();
        return (results.Sum(r => r.Calls), results.Max(r => r.WriteMs));
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
