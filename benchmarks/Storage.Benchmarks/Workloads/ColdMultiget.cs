using System.Diagnostics;
using Storage.Benchmarks.Engines;
using Storage.Benchmarks.Generators;
using Storage.Benchmarks.Measurement;
using Storage.Benchmarks.Reporting;

namespace Storage.Benchmarks.Workloads;

/// <summary>
/// W9 cold-multiget: after W1, 10,000 random existing keys read one by one, then the same keys through the
/// batched read API. Before each pass every file of the engine is dropped from the page cache (fsync, then
/// posix_fadvise DONTNEED) and the engine opened again, so both passes start cold; an unmeasured cold pass
/// goes first. The device bytes read are counted around each pass's reads alone (the engine already open).
/// </summary>
internal sealed class ColdMultiget : IWorkload
{
    private const string SingleKey = "W9/single";
    private const string BatchedKey = "W9/batched";

    public string Id => "W9";

    public string Name => "cold-multiget";

    public IReadOnlyList<WorkloadRow> Rows { get; } =
    [
        new(SingleKey, "W9 cold-multiget, one by one", "gets/s"),
        new(BatchedKey, "W9 cold-multiget, batched", "gets/s"),
    ];

    public IReadOnlyList<RowResult> Run(IEngine engine, RunContext context)
    {
        var directory = ReadRandom.FilledDirectory(engine, context, Id);
        var keys = Keys(context.Counts.FilledKeys, skip: context.Counts.FilledKeys / 3, context.Counts.Transactions);
        // Unmeasured: the first cold pass after W1 wrote the files ran up to twice as fast as later ones on the
        // virtual disks this runs on (presumably a cache below the guest's page cache still holding what was just
        // written), and would favour whichever pass came first.
        OneByOne(engine, directory, keys, SingleKey, memoryLimitBytes: null);
        var single = OneByOne(engine, directory, keys, SingleKey, memoryLimitBytes: null);
        var batched = Batched(engine, directory, keys, BatchedKey, memoryLimitBytes: null);
        return [single, batched];
    }

    /// <summary>
    /// <paramref name="count"/> keys of W1's sequence (restarting after <paramref name="filledKeys"/>), from the
    /// <paramref name="skip"/>th on: W9 starts a third of the way in (not where W3 began).
    /// </summary>
    public static ReadOnlyMemory<byte>[] Keys(long filledKeys, long skip, int count)
    {
        var source = new RandomKeySource(wrapAfterKeys: filledKeys);
        source.Skip(skip);
        var keys = new ReadOnlyMemory<byte>[count];
        for (var i = 0; i < keys.Length; i++)
        {
            var key = new byte[KeyFormat.KeySizeBytes];
            source.Next(key);
            keys[i] = key;
        }
        return keys;
    }

    /// <summary>
    /// One cold pass reading <paramref name="keys"/> one at a time. With <paramref name="memoryLimitBytes"/>, the engine
    /// is opened and read inside a memory cgroup of that size (<see cref="MemoryLimit"/>).
    /// </summary>
    public static RowResult OneByOne(IEngine engine, string directory, ReadOnlyMemory<byte>[] keys, string rowKey, long? memoryLimitBytes)
    {
        var dropped = PageCache.DropDirectory(directory);
        using var limit = memoryLimitBytes is { } bytes ? MemoryLimit.Enter(bytes) : null;
        using var instance = engine.Open(directory);
        using var reader = instance.BeginRead();
        var before = DeviceIo.Snapshot();
        var clock = Stopwatch.StartNew();
        foreach (var key in keys)
        {
            if (!reader.TryGet(key.Span, out var length) || length != ValueSource.ValueSizeBytes)
            {
                throw new WorkloadCheckException("A key the fill wrote was not found (or its value had the wrong size).");
            }
        }
        var seconds = clock.Elapsed.TotalSeconds;
        return Result(rowKey, seconds, keys.Length, dropped, DeviceIo.Snapshot().Since(before), limit);
    }

    /// <summary>One cold pass reading <paramref name="keys"/> as one batch; a note where the engine has no batched read API.</summary>
    public static RowResult Batched(IEngine engine, string directory, ReadOnlyMemory<byte>[] keys, string rowKey, long? memoryLimitBytes)
    {
        var dropped = PageCache.DropDirectory(directory);
        using var limit = memoryLimitBytes is { } bytes ? MemoryLimit.Enter(bytes) : null;
        using var instance = engine.Open(directory);
        using var reader = instance.BeginRead();
        if (reader is not IBatchedEngineReader batchedReader) return RowResult.Note(rowKey, "n/a: no batched read API");
        var before = DeviceIo.Snapshot();
        var clock = Stopwatch.StartNew();
        var found = batchedReader.GetMany(keys, ValueSource.ValueSizeBytes, out var wrongSizes);
        var seconds = clock.Elapsed.TotalSeconds;
        var device = DeviceIo.Snapshot().Since(before);
        if (found != keys.Length || wrongSizes > 0)
        {
            throw new WorkloadCheckException($"The batch found {found:N0} of {keys.Length:N0} keys the fill wrote, {wrongSizes:N0} with a value of the wrong size.");
        }
        return Result(rowKey, seconds, keys.Length, dropped, device, limit);
    }

    private static RowResult Result(string rowKey, double seconds, int gets, long dropped, DeviceIo device, MemoryLimit? limit)
    {
        var figures = new List<Figure>
        {
            new("seconds", Format.Seconds(seconds)),
            new("gets", Format.Count(gets)),
            new("gets/s", Format.Rate(gets / seconds)),
            new("bytes dropped from the page cache", Format.Bytes(dropped)),
            device.ReadFigure,
            new("device bytes read / get", device.ReadBytes is { } read ? Format.Count(read / gets) : "n/a"),
        };
        if (limit is not null)
        {
            figures.Add(new("memory limit (cgroup)", Format.Bytes(limit.LimitBytes)));
            figures.Add(new("peak memory charged (page cache included)", Format.Bytes(limit.PeakBytes)));
        }
        return new(rowKey, gets / seconds, figures);
    }
}
