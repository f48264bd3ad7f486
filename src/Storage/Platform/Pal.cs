using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;

namespace Storage.Platform;

/// <summary>
/// The native platform layer, loaded once per process: whether it is there (and of the version this
/// library expects), the process-wide data writers (one io_uring each on Linux), and one managed wrapper
/// per call that turns a failure into a <see cref="StorageException"/> carrying the OS error and the path.
/// </summary>
internal static unsafe class Pal
{
    private static readonly Lazy<string?> LoadProblem = new(Load, LazyThreadSafetyMode.ExecutionAndPublication);
    private static readonly object WriterLock = new();
    private static PalWriterHandle? _lowPriorityWriter;
    private static PalWriterHandle? _normalPriorityWriter;

    /// <summary>Whether the library loaded and has the expected version.</summary>
    public static bool IsAvailable => LoadProblem.Value is null;

    /// <summary>Why the library cannot be used, or null when it can.</summary>
    public static string? UnavailableReason => LoadProblem.Value;

    /// <summary>The name the stats give the native backend.</summary>
    public static string BackendName => OperatingSystem.IsWindows() ? "win32-overlapped" : "io_uring";

    private static string? Load()
    {
        if (!Environment.Is64BitProcess) return "the native layer is built for 64-bit processes only";
        if (!OperatingSystem.IsLinux() && !OperatingSystem.IsWindows()) return $"no native layer for {RuntimeInformation.OSDescription}";
        try
        {
            var version = PalNative.Version();
            return version == PalNative.ExpectedVersion
                ? null
                : $"{PalNative.Library} has interface version {version}; this library needs version {PalNative.ExpectedVersion}";
        }
        catch (Exception e) when (e is DllNotFoundException or EntryPointNotFoundException or BadImageFormatException)
        {
            return $"{PalNative.Library} could not be loaded: {e.Message}";
        }
    }

    /// <summary>
    /// The process-wide data writer of the given priority, opened on first use and kept for the life of the
    /// process: every environment's flushes share its ring. Returns null (with the reason) when the writer
    /// cannot be opened, for example where io_uring is disabled.
    /// </summary>
    public static PalWriterHandle? SharedWriter(bool lowPriority, out string? problem)
    {
        problem = UnavailableReason;
        if (problem is not null) return null;
        lock (WriterLock)
        {
            ref var slot = ref lowPriority ? ref _lowPriorityWriter : ref _normalPriorityWriter;
            if (slot is not null) return slot;
            var status = PalNative.WriterOpen(1024, lowPriority ? PalNative.WriterLowPriority : 0, out var writer, out var err);
            if (status != PalNative.StatusOk)
            {
                writer.Dispose();
                problem = $"the native data writer could not be opened ({Describe(status, err)})";
                return null;
            }
            slot = writer;
            return writer;
        }
    }

    /// <summary>Submits work items and waits for all of them; a failed item becomes an exception naming <paramref name="path"/>.</summary>
    public static void Submit(PalWriterHandle writer, PalNative.WriteItem* items, uint count, string operation, string path)
    {
        var status = PalNative.WriterSubmit(writer, items, count, out var err);
        if (status != PalNative.StatusOk) throw Error(status, err, operation, path);
    }

    public static PalNative.WriterStats WriterStats(PalWriterHandle writer)
    {
        var status = PalNative.WriterGetStats(writer, out var stats, out var err);
        if (status != PalNative.StatusOk) throw Error(status, err, "read the statistics of", "the native data writer");
        return stats;
    }

    /// <summary>Opens a journal file for durable writes; <paramref name="direct"/> says whether O_DIRECT was accepted.</summary>
    public static PalJournalHandle OpenJournal(string path, bool create, out bool direct)
    {
        var status = PalNative.JournalOpen(path, create ? PalNative.JournalCreate : 0, out var journal, out var mode, out var err);
        if (status != PalNative.StatusOk)
        {
            journal.Dispose();
            throw Error(status, err, "open", path);
        }
        direct = mode == PalNative.JournalDirect;
        return journal;
    }

    /// <summary>Writes <paramref name="lengthBytes"/> at <paramref name="offsetBytes"/>; durable when it returns.</summary>
    public static void JournalWrite(PalJournalHandle journal, string path, byte* data, long lengthBytes, long offsetBytes)
    {
        var buffer = new PalNative.Buffer { Data = data, Length = (ulong)lengthBytes };
        var status = PalNative.JournalWrite(journal, (ulong)offsetBytes, &buffer, 1, out var err);
        if (status != PalNative.StatusOk) throw Error(status, err, "write", path);
    }

    /// <summary>Sizes a journal file, writes zeros over all of it and syncs it.</summary>
    public static void JournalPresize(PalJournalHandle journal, string path, long sizeBytes)
    {
        var status = PalNative.JournalPresize(journal, (ulong)sizeBytes, out var err);
        if (status != PalNative.StatusOk) throw Error(status, err, "pre-size", path);
    }

    /// <summary>
    /// Renames a journal file without replacing any file at <paramref name="newPath"/>, durable when it returns (the
    /// directories synced on Linux, <c>MOVEFILE_WRITE_THROUGH</c> on Windows); the error, or null.
    /// </summary>
    public static StorageException? TryRecycleJournal(string oldPath, string newPath)
    {
        var status = PalNative.JournalRecycle(oldPath, newPath, out var err);
        return status == PalNative.StatusOk ? null : Error(status, err, $"rename '{oldPath}' to", newPath);
    }

    public static void FsyncDirectory(string path)
    {
        var status = PalNative.FsyncDirectory(path, out var err);
        if (status != PalNative.StatusOk) throw Error(status, err, "fsync", path);
    }

    public static void HardLink(string existingPath, string newPath)
    {
        var status = PalNative.HardLink(existingPath, newPath, out var err);
        if (status != PalNative.StatusOk) throw Error(status, err, $"hard-link '{existingPath}' as", newPath);
    }

    public static bool SameFile(string pathA, string pathB)
    {
        var status = PalNative.SameFile(pathA, pathB, out var same, out var err);
        if (status != PalNative.StatusOk) throw Error(status, err, $"compare '{pathA}' with", pathB);
        return same != 0;
    }

    /// <summary>Reserves real blocks for the range, extending the file; false when the file system cannot reserve.</summary>
    public static bool TryAllocate(SafeFileHandle file, string path, long offsetBytes, long lengthBytes)
    {
        var status = PalNative.FileAllocate(file, (ulong)offsetBytes, (ulong)lengthBytes, out var err);
        if (status == PalNative.StatusUnsupported) return false;
        if (status != PalNative.StatusOk) throw Error(status, err, "reserve space in", path);
        return true;
    }

    /// <summary>Asks the kernel to read mapped pages ahead of use (advisory; failures are ignored).</summary>
    public static void Prefetch(byte* mapBase, long firstPage, long pageCount, int pageSizeBytes)
    {
        if (IsAvailable) PalNative.Prefetch(mapBase, (ulong)firstPage, (ulong)pageCount, (uint)pageSizeBytes, out _);
    }

    public static PalNative.MemoryStats ReadMemoryStats()
    {
        var status = PalNative.ReadMemoryStats(out var stats, out var err);
        if (status != PalNative.StatusOk) throw Error(status, err, "read", OperatingSystem.IsLinux() ? "/proc/self/smaps_rollup" : "the process memory counters");
        return stats;
    }

    /// <summary>The exception for a failed call: disk-full errors as <see cref="StorageFullException"/>.</summary>
    public static StorageException Error(int status, int err, string operation, string path)
    {
        var message = $"Cannot {operation} '{path}': {Describe(status, err)}.";
        var full = OperatingSystem.IsWindows() ? err is 112 or 39 : err is 28 or 122;
        if (status == PalNative.StatusSystem && full) return new StorageFullException(message, path, err);
        return new StorageException(StorageErrorCode.IoFailure, message, path, err);
    }

    private static string Describe(int status, int err) => status switch
    {
        PalNative.StatusSystem => $"{Marshal.GetPInvokeErrorMessage(err)} (error {err})",
        PalNative.StatusInvalid => $"invalid argument (error {err})",
        PalNative.StatusNoMemory => "out of memory",
        PalNative.StatusUnsupported => $"not supported here (error {err})",
        PalNative.StatusClosed => "the native writer is closed",
        _ => $"status {status}, error {err}",
    };
}
