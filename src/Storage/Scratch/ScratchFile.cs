using System.Diagnostics;
using System.IO.MemoryMappedFiles;
using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;
using Storage.Paging;
using Storage.Platform;

namespace Storage.Scratch;

/// <summary>
/// Where scratch pages go once scratch memory passes its budget while a snapshot holds the flush back: a file
/// in the environment directory, mapped shared in <see cref="SegmentBytes"/> segments. Its pages are page
/// cache, not anonymous memory, so under memory pressure the kernel can write them out and drop them (there
/// is no swap to do that for anonymous memory) and fault them back in when they are read again.
/// </summary>
/// <remarks>
/// The file is created owner-only (0600) under a random name, <c>scratch-*.spill</c>, with a header naming the
/// environment; each segment's blocks are reserved before it is mapped, so a full disk fails the growth (and
/// scratch stays in memory) instead of faulting a store into the map. It is deleted when nothing is left in it
/// and at close; one a crash left behind is deleted when the environment next opens, and only if its header
/// proves it is this environment's (<see cref="RemoveStale"/>). Single pages only: overflow runs stay in memory.
/// </remarks>
internal sealed unsafe class ScratchFile : IDisposable
{
    public const string SearchPattern = "scratch-*.spill";

    /// <summary>Whether <paramref name="fileName"/> has the form of a scratch file's name (<see cref="SearchPattern"/>).</summary>
    public static bool IsScratchFileName(string fileName) => fileName.StartsWith("scratch-", StringComparison.Ordinal) && fileName.EndsWith(".spill", StringComparison.Ordinal);

    /// <summary>Bytes mapped and reserved at a time (8,192 pages).</summary>
    public const long SegmentBytes = 64L << 20;

    /// <summary>After a failed growth (a full disk), scratch stays in memory for this long before the file is tried again.</summary>
    private const long RetryAfterFailureMs = 10_000;

    /// <summary>Slots start after one page holding the header, so that they are page-aligned.</summary>
    private const long FirstSlotOffset = PageLayout.PageSizeBytes;

    private readonly object _lock = new();
    private readonly string _directory;
    private readonly ulong _environmentId;
    private readonly Stack<ScratchBuffer> _free = new();
    private readonly List<Segment> _segments = [];
    private FileStream? _file;
    private string? _path;
    private long _fileBytes;
    private long _nextSlotOffset = FirstSlotOffset;
    private long _slotsInUse;
    private long _failedAtTimestamp;
    private bool _disposed;

    public ScratchFile(string directory, ulong environmentId)
    {
        _directory = directory;
        _environmentId = environmentId;
    }

    /// <summary>Bytes of pages handed out and not given back.</summary>
    public long BytesInUse => Interlocked.Read(ref _slotsInUse) * PageLayout.PageSizeBytes;

    /// <summary>The file's path while there is one.</summary>
    public string? Path => Volatile.Read(ref _path);

    /// <summary>Why the file could not be created or grown the last time it failed, or null.</summary>
    public string? LastFailure { get; private set; }

    /// <summary>A page of the file, growing it by a segment when every page is in use; false when the file cannot grow.</summary>
    public bool TryRent(out ScratchBuffer buffer)
    {
        lock (_lock)
        {
            if (_disposed)
            {
                buffer = null!;
                return false;
            }
            if (_free.TryPop(out buffer!))
            {
                _slotsInUse++;
                return true;
            }
            if (_nextSlotOffset >= _fileBytes && !TryGrow())
            {
                buffer = null!;
                return false;
            }
            var segment = _segments[^1];
            Debug.Assert(_nextSlotOffset >= segment.OffsetBytes && _nextSlotOffset < segment.OffsetBytes + SegmentBytes, "the bump slot is in the last segment");
            buffer = new ScratchBuffer(segment.Base + (_nextSlotOffset - segment.OffsetBytes), this);
            _nextSlotOffset += PageLayout.PageSizeBytes;
            _slotsInUse++;
            return true;
        }
    }

    public void Return(ScratchBuffer buffer)
    {
        Debug.Assert(ReferenceEquals(buffer.File, this), "a page goes back to its own file");
        lock (_lock)
        {
            _slotsInUse--;
            if (!_disposed && buffer.Pointer != null) _free.Push(buffer);
        }
    }

    /// <summary>Deletes the file when no page of it is in use (the pressure has passed): its disk space comes back.</summary>
    public void DeleteIfUnused()
    {
        lock (_lock)
        {
            if (_slotsInUse != 0 || _file is null) return;
            CloseAndDelete();
        }
    }

    private bool TryGrow()
    {
        if (_failedAtTimestamp != 0 && Stopwatch.GetElapsedTime(_failedAtTimestamp).TotalMilliseconds < RetryAfterFailureMs) return false;
        try
        {
            if (_file is null) Create();
            var offset = _fileBytes == 0 ? FirstSlotOffset : _fileBytes;
            // Real blocks, so that no store into the map can fail for want of space.
            FileIo.Reserve(_file!.SafeFileHandle, _path!, offset, SegmentBytes);
            _segments.Add(new Segment(_file.SafeFileHandle, offset));
            _fileBytes = offset + SegmentBytes;
            _nextSlotOffset = offset;
            _failedAtTimestamp = 0;
            return true;
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            // The file only relieves memory: when it cannot grow (a full disk, a file system without shared maps), scratch stays in memory.
            LastFailure = e.Message;
            _failedAtTimestamp = Math.Max(1, Stopwatch.GetTimestamp());
            if (_segments.Count == 0) CloseAndDelete();
            return false;
        }
    }

    private void Create()
    {
        var path = System.IO.Path.Combine(_directory, $"scratch-{Random.Shared.NextInt64():x16}.spill");
        var options = new FileStreamOptions
        {
            Mode = FileMode.CreateNew,
            Access = FileAccess.ReadWrite,
            // Readable by the owner's tools (the inspection tool, tests); only the environment that created it writes it.
            Share = FileShare.Read,
            BufferSize = 0,
        };
        if (!OperatingSystem.IsWindows()) options.UnixCreateMode = Platform.FileIo.OwnerReadWrite;
        var file = new FileStream(path, options);
        try
        {
            var header = ScratchFileHeader.Create(_environmentId);
            Span<byte> page = stackalloc byte[ScratchFileHeader.SizeBytes];
            MemoryMarshal.Write(page, in header);
            RandomAccess.Write(file.SafeFileHandle, page, 0);
            // The header is durable before anything else happens to the file: a crash then leaves a file provably
            // this environment's, which the next open deletes.
            FileIo.SyncData(file.SafeFileHandle, path, faults: null);
        }
        catch
        {
            file.Dispose();
            File.Delete(path);
            throw;
        }
        _file = file;
        Volatile.Write(ref _path, path);
        _fileBytes = FirstSlotOffset;
    }

    /// <summary>Unmaps and deletes the file. Pages still handed out must not be used afterwards (the caller knows there are none).</summary>
    private void CloseAndDelete()
    {
        foreach (var buffer in _free) buffer.Release();
        _free.Clear();
        foreach (var segment in _segments) segment.Dispose();
        _segments.Clear();
        var path = _path;
        _file?.Dispose();
        _file = null;
        Volatile.Write(ref _path, null);
        _fileBytes = 0;
        _nextSlotOffset = FirstSlotOffset;
        if (path is null) return;
        try
        {
            File.Delete(path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            // Left for the next open, which deletes it: the header proves it is this environment's.
            LastFailure = $"Could not delete '{path}': {e.Message}";
        }
    }

    /// <summary>
    /// Deletes the scratch files a crash left in <paramref name="directory"/> whose header proves they are environment
    /// <paramref name="environmentId"/>'s. Call with the directory's lock held: no live instance then uses one. Files
    /// it cannot prove are this environment's are left alone. Returns how many it deleted.
    /// </summary>
    public static int RemoveStale(string directory, ulong environmentId)
    {
        var removed = 0;
        Span<byte> header = stackalloc byte[ScratchFileHeader.SizeBytes];
        foreach (var path in Directory.EnumerateFiles(directory, SearchPattern, SearchOption.TopDirectoryOnly))
        {
            try
            {
                bool owned;
                using (var handle = File.OpenHandle(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete))
                {
                    owned = RandomAccess.Read(handle, header, 0) == header.Length && ScratchFileHeader.IsOwnedBy(header, environmentId);
                }
                if (!owned) continue;
                File.Delete(path);
                removed++;
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                // Not readable or not deletable: not provably ours to remove, or not removable now; the next open tries again.
            }
        }
        return removed;
    }

    /// <summary>At close, once nothing can point into the file any more.</summary>
    public void Dispose()
    {
        lock (_lock)
        {
            if (_disposed) return;
            _disposed = true;
            CloseAndDelete();
        }
    }

    /// <summary>One mapped segment of the file.</summary>
    private sealed class Segment : IDisposable
    {
        private readonly MemoryMappedFile _map;
        private readonly MemoryMappedViewAccessor _view;

        public Segment(SafeFileHandle handle, long offsetBytes)
        {
            OffsetBytes = offsetBytes;
            _map = MemoryMappedFile.CreateFromFile(handle, mapName: null, offsetBytes + SegmentBytes, MemoryMappedFileAccess.ReadWrite, HandleInheritability.None, leaveOpen: true);
            try
            {
                _view = _map.CreateViewAccessor(offsetBytes, SegmentBytes, MemoryMappedFileAccess.ReadWrite);
            }
            catch
            {
                _map.Dispose();
                throw;
            }
            byte* pointer = null;
            _view.SafeMemoryMappedViewHandle.AcquirePointer(ref pointer);
            Base = pointer + _view.PointerOffset;
        }

        public long OffsetBytes { get; }

        public byte* Base { get; }

        public void Dispose()
        {
            _view.SafeMemoryMappedViewHandle.ReleasePointer();
            _view.Dispose();
            _map.Dispose();
        }
    }
}
