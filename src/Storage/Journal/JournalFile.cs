using System.Globalization;
using Microsoft.Win32.SafeHandles;
using Storage.Faults;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>One pre-sized, pre-written journal file, open for durable writes.</summary>
internal sealed class JournalFile : IDisposable
{
    public const string Extension = ".journal";
    private const int ZeroChunkBytes = 1 << 20;

    public const string SpareExtension = ".spare";

    private readonly SafeFileHandle? _managed;
    private readonly PalJournalHandle? _native;

    private JournalFile(long number, string path, SafeFileHandle? managed, PalJournalHandle? native, long sizeBytes, bool direct)
    {
        Number = number;
        Path = path;
        _managed = managed;
        _native = native;
        SizeBytes = sizeBytes;
        IsDirect = direct;
    }

    /// <summary>The journal number, or -1 for a spare not in use yet.</summary>
    public long Number { get; private set; }

    public string Path { get; private set; }

    public long SizeBytes { get; }

    /// <summary>Opened O_DIRECT|O_DSYNC (false: O_DSYNC or write-through only).</summary>
    public bool IsDirect { get; }

    /// <summary>The file held entries before (a retired file kept as a spare): stale bytes follow whatever it holds now.</summary>
    public bool IsRecycled { get; set; }

    /// <summary>
    /// Whether the file has names besides this one (a hard link made by a backup, or another environment's link): its
    /// contents are then not only the journal's to overwrite, so it is never recycled, only unlinked.
    /// </summary>
    public bool HasOtherNames => Posix.LinkCount(Path) is > 1;

    /// <summary>The name (without extension) of spare <paramref name="counter"/>: <c>spare-&lt;n&gt;</c>.</summary>
    public static string SpareName(long counter) => "spare-" + counter.ToString(CultureInfo.InvariantCulture);

    /// <summary>The counter of a spare's file name (with or without extension), or false for any other name.</summary>
    public static bool TryParseSpareCounter(string fileName, out long counter)
    {
        counter = 0;
        var name = fileName.EndsWith(SpareExtension, StringComparison.Ordinal) ? fileName[..^SpareExtension.Length] : fileName;
        return name.StartsWith("spare-", StringComparison.Ordinal)
            && long.TryParse(name.AsSpan(6), NumberStyles.None, CultureInfo.InvariantCulture, out counter);
    }

    /// <summary>
    /// Spares left in <paramref name="directory"/> by an earlier run are pre-written already: those of
    /// <paramref name="environmentId"/> (a journal file header of its own, shared or not: recycled) or blank (never used),
    /// at least <paramref name="minSizeBytes"/> long and with no other name, go into <paramref name="into"/> for reuse while
    /// it holds fewer than <paramref name="max"/>; the environment's other spares are deleted (for one with another name
    /// too, only its name here), and anything else is left alone. Returns the highest spare counter met, so that new
    /// spares are numbered after every one there.
    /// </summary>
    public static long AdoptSpares(string directory, ulong environmentId, long minSizeBytes, int max, Queue<JournalFile> into, PlatformIo io, IFaultInjector? faults)
    {
        long highest = 0;
        if (!Directory.Exists(directory)) return highest;
        foreach (var path in Directory.EnumerateFiles(directory, "*" + SpareExtension))
        {
            if (!TryParseSpareCounter(System.IO.Path.GetFileName(path), out var counter)) continue;
            highest = Math.Max(highest, counter);
            var ownership = JournalFiles.Ownership(path, environmentId);
            if (ownership is not (JournalFileOwnership.Own or JournalFileOwnership.Blank)) continue;
            var length = new FileInfo(path).Length;
            if (into.Count < max && length >= minSizeBytes && length % AlignedBuffer.Alignment == 0 && Posix.LinkCount(path) is not > 1)
            {
                var spare = Open(path, number: -1, io);
                spare.IsRecycled = ownership == JournalFileOwnership.Own;
                into.Enqueue(spare);
            }
            else
            {
                JournalFiles.Delete(path, faults);
            }
        }
        return highest;
    }

    /// <summary>Waits for a spare being made in the background; one that failed is not used, and its error is not this caller's.</summary>
    public static void WaitForPreparation(Task? preparing)
    {
        try
        {
            preparing?.Wait();
        }
        catch (AggregateException)
        {
            // Nothing to clean: a spare that failed to be made is not used.
        }
    }

    public static string FileName(long number) => number.ToString("D16", CultureInfo.InvariantCulture) + Extension;

    public static bool TryParseNumber(string fileName, out long number)
    {
        number = 0;
        return fileName.EndsWith(Extension, StringComparison.Ordinal)
            && long.TryParse(fileName.AsSpan(0, fileName.Length - Extension.Length), NumberStyles.None, CultureInfo.InvariantCulture, out number);
    }

    /// <summary>
    /// Creates the file at its full size and writes zeros through it, then syncs it and its directory,
    /// so that later durable writes change no file metadata (no size change, no unwritten extents).
    /// </summary>
    public static unsafe JournalFile CreateSpare(string directory, string spareName, long sizeBytes, PlatformIo io, IFaultInjector? faults)
    {
        var path = System.IO.Path.Combine(directory, spareName + SpareExtension);
        try
        {
            if (io.IsNative) return CreateSpareNative(directory, path, sizeBytes, faults);
            using (var handle = FileIo.OpenReadWrite(path, create: true))
            {
                FileIo.SetLength(handle, path, sizeBytes, faults);
                faults?.AfterSetLength(path, sizeBytes);
                using var zeros = new AlignedBuffer(ZeroChunkBytes);
                new Span<byte>(zeros.Pointer, ZeroChunkBytes).Clear();
                for (long offset = 0; offset < sizeBytes; offset += ZeroChunkBytes)
                {
                    var chunk = (int)Math.Min(ZeroChunkBytes, sizeBytes - offset);
                    FileIo.Write(handle, path, new ReadOnlySpan<byte>(zeros.Pointer, chunk), offset, faults);
                    faults?.AfterWrite(path, offset, new ReadOnlySpan<byte>(zeros.Pointer, chunk), durable: false);
                }
                FileIo.SyncData(handle, path, faults);
            }
            FileIo.SyncDirectory(directory, faults);
            return Open(path, number: -1, io);
        }
        catch (Exception e) when (e is StorageException or IOException)
        {
            // The spare was created here under a fresh name and never used: on a full disk, what it took of the space
            // goes back at once instead of waiting for the next open to find it.
            TryDeleteUnusedSpare(path, faults);
            throw;
        }
    }

    private static void TryDeleteUnusedSpare(string path, IFaultInjector? faults)
    {
        try
        {
            if (File.Exists(path)) JournalFiles.Delete(path, faults);
        }
        catch (Exception e) when (e is StorageException or IOException)
        {
            // Left for the next open, which adopts or deletes spares it can prove are its own.
        }
    }

    private static JournalFile CreateSpareNative(string directory, string path, long sizeBytes, IFaultInjector? faults)
    {
        var handle = Pal.OpenJournal(path, create: true, out var direct);
        try
        {
            try
            {
                faults?.BeforeWrite(path, 0, sizeBytes);
                faults?.BeforeSync(path);
            }
            catch (IOException e)
            {
                throw FileIo.Translate(e, "write", path);
            }
            Pal.JournalPresize(handle, path, sizeBytes);
            faults?.AfterSetLength(path, sizeBytes);
            faults?.BeforeSync(path);
            FileIo.SyncDirectory(directory, faults);
            return new JournalFile(-1, path, null, handle, sizeBytes, direct);
        }
        catch
        {
            handle.Dispose();
            throw;
        }
    }

    /// <summary>
    /// Renames the file. A spare becomes journal <paramref name="number"/> only when it goes into use, so
    /// files are used in number order whichever spare was ready first; a retired file becomes a spare again
    /// (its old entries carry older transaction ids, which replay never takes).
    /// </summary>
    public void Rename(string directory, string fileName, long number, IFaultInjector? faults)
    {
        var path = System.IO.Path.Combine(directory, fileName);
        if (_native is not null)
        {
            RenameNative(directory, path, number, faults);
            return;
        }
        // The seam records the new name before the directory sync, which may fail: the file is under it now.
        FileIo.Rename(Path, path, faults);
        Path = path;
        Number = number;
        FileIo.SyncDirectory(directory, faults);
    }

    /// <summary>
    /// The rename in one native call that also makes it durable: on Windows a directory cannot be synced, and a
    /// rename is on disk at once only with <c>MOVEFILE_WRITE_THROUGH</c>. The managed seam sees the rename and then
    /// the directory sync, as on the managed backend.
    /// </summary>
    private void RenameNative(string directory, string path, long number, IFaultInjector? faults)
    {
        var failure = Pal.TryRecycleJournal(Path, path);
        // A failed directory sync leaves the file under its new name: record that before failing.
        if (failure is not null && (File.Exists(Path) || !File.Exists(path))) throw failure;
        faults?.AfterRename(Path, path);
        Path = path;
        Number = number;
        if (failure is not null) throw failure;
        FileIo.BeforeDirectorySync(directory, faults);
    }

    public static JournalFile Open(string path, long number, PlatformIo io)
    {
        var length = new FileInfo(path).Length;
        if (io.IsNative)
        {
            var native = Pal.OpenJournal(path, create: false, out var nativeDirect);
            return new JournalFile(number, path, null, native, length, nativeDirect);
        }
        var handle = FileIo.OpenDurable(path, out var direct);
        return new JournalFile(number, path, handle, null, RandomAccess.GetLength(handle), direct);
    }

    /// <summary>
    /// Writes at <paramref name="offsetBytes"/>, durable when it returns: on the O_DSYNC (or write-through) handle, or,
    /// with <see cref="JournalWriteMethod.BufferedThenSync"/>, into the page cache through a handle of its own and then fdatasync.
    /// </summary>
    public unsafe void Write(byte* data, int lengthBytes, long offsetBytes, IFaultInjector? faults, JournalWriteMethod method = JournalWriteMethod.DirectSync)
    {
        if (method == JournalWriteMethod.BufferedThenSync)
        {
            WriteBufferedThenSync(data, lengthBytes, offsetBytes, faults);
            return;
        }
        if (_native is null)
        {
            FileIo.Write(_managed!, Path, new ReadOnlySpan<byte>(data, lengthBytes), offsetBytes, faults);
            faults?.AfterWrite(Path, offsetBytes, new ReadOnlySpan<byte>(data, lengthBytes), durable: true);
            return;
        }
        try
        {
            faults?.BeforeWrite(Path, offsetBytes, lengthBytes);
        }
        catch (IOException e)
        {
            throw FileIo.Translate(e, "write", Path);
        }
        Pal.JournalWrite(_native, Path, data, lengthBytes, offsetBytes);
        faults?.AfterWrite(Path, offsetBytes, new ReadOnlySpan<byte>(data, lengthBytes), durable: true);
    }

    private unsafe void WriteBufferedThenSync(byte* data, int lengthBytes, long offsetBytes, IFaultInjector? faults)
    {
        var buffered = _buffered ??= FileIo.OpenReadWrite(Path, create: false);
        var bytes = new ReadOnlySpan<byte>(data, lengthBytes);
        FileIo.Write(buffered, Path, bytes, offsetBytes, faults);
        faults?.AfterWrite(Path, offsetBytes, bytes, durable: false);
        FileIo.SyncData(buffered, Path, faults);
    }

    /// <summary>A buffered handle for <see cref="JournalWriteMethod.BufferedThenSync"/>, opened at its first use.</summary>
    private SafeFileHandle? _buffered;

    /// <summary>Writes the file's header block durably (before the file is renamed into use).</summary>
    public unsafe void WriteHeader(in JournalFileHeader header, IFaultInjector? faults)
    {
        using var block = new AlignedBuffer(JournalFileHeader.BlockBytes);
        header.WriteBlock(block.Pointer);
        Write(block.Pointer, JournalFileHeader.BlockBytes, 0, faults);
    }

    /// <summary>Writes one prepared block (an end marker) durably at <paramref name="offsetBytes"/>, right after the file's last entry.</summary>
    public unsafe void WriteBlock(AlignedBuffer block, long offsetBytes, IFaultInjector? faults) =>
        Write(block.Pointer, JournalBlock.Bytes, offsetBytes, faults);

    public void Delete(IFaultInjector? faults)
    {
        Dispose();
        try
        {
            File.Delete(Path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw FileIo.Translate(e, "delete", Path);
        }
        faults?.AfterDelete(Path);
        FileIo.SyncParent(Path, faults);
    }

    public void Dispose()
    {
        _buffered?.Dispose();
        _managed?.Dispose();
        _native?.Dispose();
    }
}
