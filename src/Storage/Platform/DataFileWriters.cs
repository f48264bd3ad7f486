using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;
using Storage.Faults;
using Storage.Paging;
using Storage.Scratch;

namespace Storage.Platform;

/// <summary>
/// Writes checksummed page versions to the data file and syncs it. One per data file, used by one thread
/// at a time (the flusher, or recovery before the flusher starts).
/// </summary>
internal interface IDataFileWriter : IDisposable
{
    /// <summary>Writes pages sorted by page number, merging adjacent ones; returns the number of write calls.</summary>
    int Write(SafeFileHandle handle, string path, IReadOnlyList<(long PageNumber, ScratchBuffer Buffer)> pages, IFaultInjector? faults);

    /// <summary>Makes every completed write durable (fdatasync, or FlushFileBuffers).</summary>
    void Sync(SafeFileHandle handle, string path, IFaultInjector? faults);
}

/// <summary>Runs of adjacent pages, each as one RandomAccess vectored write.</summary>
internal sealed unsafe class ManagedDataFileWriter : IDataFileWriter
{
    private const int MaxBuffersPerWrite = 1024; // IOV_MAX on Linux
    private const long MaxBytesPerWrite = 1L << 30;

    private readonly List<ReadOnlyMemory<byte>> _gather = new(MaxBuffersPerWrite);

    public int Write(SafeFileHandle handle, string path, IReadOnlyList<(long PageNumber, ScratchBuffer Buffer)> pages, IFaultInjector? faults)
    {
        var runs = 0;
        var i = 0;
        while (i < pages.Count)
        {
            var (start, first) = pages[i];
            if (first.SizeBytes > MaxBytesPerWrite)
            {
                // A run too large for one gather entry is written on its own, in pieces.
                WriteLarge(handle, path, first, start, faults);
                i++;
                runs++;
                continue;
            }
            _gather.Clear();
            var next = start;
            long bytes = 0;
            while (i < pages.Count && pages[i].PageNumber == next && pages[i].Buffer.SizeBytes <= MaxBytesPerWrite
                && _gather.Count < MaxBuffersPerWrite && bytes < MaxBytesPerWrite)
            {
                var buffer = pages[i].Buffer;
                _gather.Add(buffer.AsMemory());
                bytes += buffer.SizeBytes;
                next += buffer.PageCount;
                i++;
            }
            FileIo.WriteGather(handle, path, _gather, start * PageLayout.PageSizeBytes, bytes, faults);
            runs++;
        }
        _gather.Clear();
        return runs;
    }

    private static void WriteLarge(SafeFileHandle handle, string path, ScratchBuffer buffer, long pageNumber, IFaultInjector? faults)
    {
        long done = 0;
        while (done < buffer.SizeBytes)
        {
            var chunk = (int)Math.Min(buffer.SizeBytes - done, MaxBytesPerWrite);
            FileIo.Write(handle, path, new ReadOnlySpan<byte>(buffer.Pointer + done, chunk), pageNumber * PageLayout.PageSizeBytes + done, faults);
            done += chunk;
        }
    }

    public void Sync(SafeFileHandle handle, string path, IFaultInjector? faults) => FileIo.SyncData(handle, path, faults);

    public void Dispose()
    {
    }
}

/// <summary>
/// Hands a flush to the process-wide native writer as one work item of page references: the writer merges
/// adjacent pages into runs, on Linux one writev each (up to IOV_MAX pages) on its ring at background priority, on
/// Windows one overlapped WriteFile each (up to 1 MiB).
/// </summary>
internal sealed unsafe class RingDataFileWriter : IDataFileWriter
{
    private readonly PalWriterHandle _writer;
    private PalNative.PageRef* _refs;
    private long _capacity;

    public RingDataFileWriter(PalWriterHandle writer) => _writer = writer;

    public int Write(SafeFileHandle handle, string path, IReadOnlyList<(long PageNumber, ScratchBuffer Buffer)> pages, IFaultInjector? faults)
    {
        var count = pages.Count;
        if (count == 0) return 0;
        EnsureCapacity(count);

        // One reference per page or overflow run, in one pass; the writer merges adjacent ones into runs.
        var runStart = pages[0].PageNumber;
        var runEnd = runStart;
        for (var i = 0; i < count; i++)
        {
            var (pageNumber, buffer) = pages[i];
            if (faults is not null && pageNumber != runEnd)
            {
                InjectedFault(faults, path, runStart, runEnd);
                runStart = pageNumber;
            }
            _refs[i] = new PalNative.PageRef { PageNumber = (ulong)pageNumber, Data = buffer.Pointer, PageCount = (uint)buffer.PageCount };
            runEnd = pageNumber + buffer.PageCount;
        }
        if (faults is not null) InjectedFault(faults, path, runStart, runEnd);

        var added = false;
        handle.DangerousAddRef(ref added);
        try
        {
            var item = new PalNative.WriteItem
            {
                Fd = handle.DangerousGetHandle(),
                Refs = _refs,
                RefCount = (uint)count,
                PageSize = PageLayout.PageSizeBytes,
                Kind = PalNative.ItemWrite,
            };
            Pal.Submit(_writer, &item, 1, "write", path);
            return (int)item.Runs;
        }
        finally
        {
            if (added) handle.DangerousRelease();
        }
    }

    /// <summary>
    /// The managed seam, consulted per run before the ring sees any: a fault here fails the whole flush before
    /// anything is written (a <see cref="PartialWriteException"/> too). Partial and short ring writes are the
    /// native seam's (<see cref="PalFaults"/>), applied inside the ring where the re-queue logic lives.
    /// </summary>
    private static void InjectedFault(IFaultInjector faults, string path, long runStart, long runEnd)
    {
        try
        {
            faults.BeforeWrite(path, runStart * PageLayout.PageSizeBytes, (runEnd - runStart) * PageLayout.PageSizeBytes);
        }
        catch (IOException e)
        {
            throw FileIo.Translate(e, "write", path);
        }
    }

    public void Sync(SafeFileHandle handle, string path, IFaultInjector? faults)
    {
        if (faults is not null)
        {
            try
            {
                faults.BeforeSync(path);
            }
            catch (IOException e)
            {
                throw FileIo.Translate(e, "fsync", path);
            }
        }
        var added = false;
        handle.DangerousAddRef(ref added);
        try
        {
            var item = new PalNative.WriteItem { Fd = handle.DangerousGetHandle(), Kind = PalNative.ItemFdatasync, PageSize = PageLayout.PageSizeBytes };
            Pal.Submit(_writer, &item, 1, "fdatasync", path);
        }
        finally
        {
            if (added) handle.DangerousRelease();
        }
    }

    private void EnsureCapacity(long count)
    {
        if (count <= _capacity) return;
        var capacity = Math.Max(count, Math.Max(1024, _capacity * 2));
        NativeMemory.Free(_refs);
        _refs = (PalNative.PageRef*)NativeMemory.Alloc((nuint)capacity, (nuint)sizeof(PalNative.PageRef));
        _capacity = capacity;
    }

    public void Dispose()
    {
        NativeMemory.Free(_refs);
        _refs = null;
        _capacity = 0;
    }
}
