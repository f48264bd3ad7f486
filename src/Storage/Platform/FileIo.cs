using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;
using Storage.Faults;

namespace Storage.Platform;

/// <summary>
/// File operations of the managed backend, each turning a failure into a <see cref="StorageException"/>
/// that carries the OS error and the path. Every call passes the <see cref="IFaultInjector"/> seam first.
/// </summary>
internal static class FileIo
{
    /// <summary>What every file and folder the engine creates allows on Unix: its owner alone.</summary>
    public const UnixFileMode OwnerReadWrite = UnixFileMode.UserRead | UnixFileMode.UserWrite;

    /// <summary><see cref="OwnerReadWrite"/> as open(2) takes it (0600).</summary>
    private const int UnixFilePermissions = (int)OwnerReadWrite;

    public const UnixFileMode OwnerOnlyDirectory = UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute;

    /// <summary>
    /// Opens (creating if asked) a file for positional reads and writes; <paramref name="overlapped"/> opens it for
    /// asynchronous (overlapped) I/O as well, which the synchronous calls on it still wait for.
    /// </summary>
    public static SafeFileHandle OpenReadWrite(string path, bool create, bool overlapped = false)
    {
        try
        {
            return OpenHandle(path, create ? FileMode.OpenOrCreate : FileMode.Open, FileAccess.ReadWrite, FileShare.ReadWrite | FileShare.Delete,
                overlapped ? FileOptions.Asynchronous : FileOptions.None);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw Translate(e, "open", path);
        }
    }

    /// <summary>
    /// <see cref="File.OpenHandle"/>, creating a missing file owner-only (0600) on Unix with <see cref="FileMode.OpenOrCreate"/>:
    /// <c>OpenHandle</c> takes no creation mode (the process's umask would decide), so the file is made first with one.
    /// </summary>
    public static SafeFileHandle OpenHandle(string path, FileMode mode, FileAccess access, FileShare share, FileOptions options = FileOptions.None)
    {
        if (mode == FileMode.OpenOrCreate && !OperatingSystem.IsWindows() && !File.Exists(path))
        {
            try
            {
                using var created = new FileStream(path, new FileStreamOptions
                {
                    Mode = FileMode.CreateNew,
                    Access = FileAccess.Write,
                    Share = FileShare.ReadWrite | FileShare.Delete,
                    UnixCreateMode = OwnerReadWrite,
                });
            }
            catch (IOException) when (File.Exists(path))
            {
                // Made in the meantime by another opener: opened below as it is.
            }
        }
        return File.OpenHandle(path, mode, access, share, options, preallocationSize: 0);
    }

    /// <summary>Creates a folder (and any missing parents), owner-only (0700) on Unix.</summary>
    public static void CreateDirectory(string path)
    {
        if (OperatingSystem.IsWindows()) Directory.CreateDirectory(path);
        else Directory.CreateDirectory(path, OwnerOnlyDirectory);
    }

    /// <summary>
    /// Creates a directory (owner-only) and, unless <paramref name="syncParent"/> is false (the caller makes it durable with
    /// what it puts in it), makes its entry durable by syncing its parent.
    /// </summary>
    /// <exception cref="StorageException">The directory could not be created (its code and OS error say why).</exception>
    public static void CreateDirectory(string path, IFaultInjector? faults, bool syncParent = true)
    {
        try
        {
            CreateDirectory(path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw Translate(e, "create", path);
        }
        faults?.AfterCreateDirectory(path);
        if (syncParent) SyncParent(path, faults);
    }

    /// <summary>
    /// Opens a journal file for durable writes that change no metadata: O_DIRECT|O_DSYNC where the file
    /// system allows it, O_DSYNC alone where O_DIRECT is refused (tmpfs), write-through elsewhere.
    /// </summary>
    public static SafeFileHandle OpenDurable(string path, out bool direct)
    {
        if (Posix.IsSupported)
        {
            var baseFlags = Posix.ReadWrite | Posix.CloseOnExec | Posix.DataSync;
            var fd = Posix.Open(path, baseFlags | Posix.Direct, UnixFilePermissions);
            direct = fd >= 0;
            if (fd < 0)
            {
                var errno = Marshal.GetLastPInvokeError();
                if (errno != Posix.ErrInvalid) throw new StorageException(StorageErrorCode.IoFailure, $"Cannot open journal file '{path}' (errno {errno}).", path, errno);
                fd = Posix.Open(path, baseFlags, UnixFilePermissions);
                if (fd < 0)
                {
                    errno = Marshal.GetLastPInvokeError();
                    throw new StorageException(StorageErrorCode.IoFailure, $"Cannot open journal file '{path}' (errno {errno}).", path, errno);
                }
            }
            return new SafeFileHandle(fd, ownsHandle: true);
        }

        direct = false;
        try
        {
            return File.OpenHandle(path, FileMode.Open, FileAccess.ReadWrite, FileShare.ReadWrite | FileShare.Delete, FileOptions.WriteThrough);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw Translate(e, "open", path);
        }
    }

    public static int Read(SafeFileHandle handle, string path, Span<byte> buffer, long offsetBytes)
    {
        try
        {
            var total = 0;
            while (total < buffer.Length)
            {
                var read = RandomAccess.Read(handle, buffer[total..], offsetBytes + total);
                if (read == 0) break;
                total += read;
            }
            return total;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw Translate(e, "read", path);
        }
    }

    public static void Write(SafeFileHandle handle, string path, ReadOnlySpan<byte> buffer, long offsetBytes, IFaultInjector? faults)
    {
        try
        {
            try
            {
                faults?.BeforeWrite(path, offsetBytes, buffer.Length);
            }
            catch (PartialWriteException partial)
            {
                RandomAccess.Write(handle, buffer[..(int)Math.Min(partial.BytesBeforeFailure, buffer.Length)], offsetBytes);
                throw;
            }
            RandomAccess.Write(handle, buffer, offsetBytes);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw Translate(e, "write", path);
        }
    }

    public static void WriteGather(SafeFileHandle handle, string path, IReadOnlyList<ReadOnlyMemory<byte>> buffers, long offsetBytes, long lengthBytes, IFaultInjector? faults)
    {
        try
        {
            try
            {
                faults?.BeforeWrite(path, offsetBytes, lengthBytes);
            }
            catch (PartialWriteException partial)
            {
                RandomAccess.Write(handle, Prefix(buffers, partial.BytesBeforeFailure), offsetBytes);
                throw;
            }
            RandomAccess.Write(handle, buffers, offsetBytes);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw Translate(e, "write", path);
        }
    }

    /// <summary>The first <paramref name="lengthBytes"/> bytes of a gather list (all of it if it is shorter).</summary>
    private static List<ReadOnlyMemory<byte>> Prefix(IReadOnlyList<ReadOnlyMemory<byte>> buffers, long lengthBytes)
    {
        var prefix = new List<ReadOnlyMemory<byte>>();
        for (var i = 0; i < buffers.Count && lengthBytes > 0; i++)
        {
            var take = (int)Math.Min(buffers[i].Length, lengthBytes);
            prefix.Add(buffers[i][..take]);
            lengthBytes -= take;
        }
        return prefix;
    }

    /// <summary>fdatasync on Linux (the data and the size, not the timestamps), fsync/FlushFileBuffers elsewhere.</summary>
    public static void SyncData(SafeFileHandle handle, string path, IFaultInjector? faults)
    {
        try
        {
            faults?.BeforeSync(path);
        }
        catch (IOException e)
        {
            throw Translate(e, "fsync", path);
        }
        if (Posix.IsSupported)
        {
            var added = false;
            handle.DangerousAddRef(ref added);
            try
            {
                if (Posix.FDataSync(handle.DangerousGetHandle()) != 0)
                {
                    var errno = Marshal.GetLastPInvokeError();
                    throw new StorageException(StorageErrorCode.IoFailure, $"fdatasync failed on '{path}' (errno {errno}).", path, errno);
                }
            }
            finally
            {
                if (added) handle.DangerousRelease();
            }
            return;
        }
        try
        {
            RandomAccess.FlushToDisk(handle);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw Translate(e, "fsync", path);
        }
    }

    /// <summary>
    /// Writes a file's dirty pages out <paramref name="stepBytes"/> at a time, waiting for each step (Linux
    /// <c>sync_file_range</c>), ahead of the fdatasync that makes them durable. A sync of a file with hundreds of MiB
    /// dirty hands them all to the device at once, and a journal write queued behind them waits for all of them; in
    /// steps, it waits for one. Does nothing where the call is missing or refused for the file.
    /// </summary>
    /// <exception cref="StorageException">A write failed: as for a failed fdatasync (the error is reported once, here).</exception>
    public static void WriteBackInSteps(SafeFileHandle handle, string path, long lengthBytes, long stepBytes)
    {
        for (long offset = 0; offset < lengthBytes; offset += stepBytes)
        {
            if (!WriteBack(handle, path, offset, Math.Min(stepBytes, lengthBytes - offset), wait: true)) return;
        }
    }

    /// <summary>
    /// Hands the dirty pages of a range of a file to the device (Linux <c>sync_file_range</c>), and with
    /// <paramref name="wait"/> waits until they are written (not durable: an fdatasync still follows). False where the
    /// call is missing or refused for the file: the fdatasync that follows does the work.
    /// </summary>
    /// <exception cref="StorageException">A write failed: as for a failed fdatasync (the error is reported once, here).</exception>
    public static bool WriteBack(SafeFileHandle handle, string path, long offsetBytes, long lengthBytes, bool wait)
    {
        if (!Posix.IsSupported) return false;
        var added = false;
        handle.DangerousAddRef(ref added);
        try
        {
            if (Posix.SyncFileRange(handle.DangerousGetHandle(), offsetBytes, lengthBytes, wait ? Posix.SyncFileRangeWriteAndWait : Posix.SyncFileRangeWrite) == 0) return true;
            var errno = Marshal.GetLastPInvokeError();
            // EINVAL, ESPIPE, ENOSYS: not for this file (or kernel).
            if (errno is Posix.ErrInvalid or Posix.ErrIllegalSeek or Posix.ErrNotImplemented) return false;
            throw new StorageException(StorageErrorCode.IoFailure, $"Writing back '{path}' failed (errno {errno}).", path, errno);
        }
        finally
        {
            if (added) handle.DangerousRelease();
        }
    }

    public static void SetLength(SafeFileHandle handle, string path, long lengthBytes, IFaultInjector? faults = null)
    {
        try
        {
            faults?.BeforeResize(path, lengthBytes);
            RandomAccess.SetLength(handle, lengthBytes);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw Translate(e, "set the length of", path);
        }
    }

    /// <summary>
    /// Gives the range real blocks, extending the file past its end if needed (fallocate, or the cluster reservation on
    /// Windows), so that later writes into it and stores through a map of it cannot fail for want of space. A file system
    /// that cannot reserve gets the length alone (a sparse range). A full disk is a <see cref="StorageFullException"/>.
    /// </summary>
    public static void Reserve(SafeFileHandle handle, string path, long offsetBytes, long lengthBytes, IFaultInjector? faults = null)
    {
        try
        {
            faults?.BeforeResize(path, offsetBytes + lengthBytes);
        }
        catch (IOException e)
        {
            throw Translate(e, "reserve space in", path);
        }
        if (Pal.IsAvailable)
        {
            if (Pal.TryAllocate(handle, path, offsetBytes, lengthBytes)) return;
        }
        else if (Posix.IsSupported)
        {
            var error = Posix.PosixFAllocate(handle.DangerousGetHandle(), offsetBytes, lengthBytes);
            if (error == 0) return;
            // EOPNOTSUPP (95) and EINVAL (22, a file system without fallocate that glibc cannot emulate): length alone.
            if (error is not (95 or 22)) throw Pal.Error(PalNative.StatusSystem, error, "reserve space in", path);
        }
        var end = offsetBytes + lengthBytes;
        if (RandomAccess.GetLength(handle) < end) SetLength(handle, path, end);
    }

    /// <summary>
    /// Gives the range's blocks back to the file system, keeping the file's length (the range then reads as zeros). False when
    /// the file system cannot (the caller stops asking). Other failures are a <see cref="StorageException"/>.
    /// </summary>
    public static bool PunchHole(SafeFileHandle handle, string path, long offsetBytes, long lengthBytes, IFaultInjector? faults = null)
    {
        try
        {
            faults?.BeforeResize(path, -1);
        }
        catch (IOException e)
        {
            throw Translate(e, "free space in", path);
        }
        if (Pal.IsAvailable)
        {
            var status = PalNative.FilePunchHole(handle, (ulong)offsetBytes, (ulong)lengthBytes, out var err);
            if (status == PalNative.StatusOk) return true;
            // EOPNOTSUPP, EINVAL, ENOSYS; on Windows ERROR_INVALID_FUNCTION and ERROR_NOT_SUPPORTED (a file system without sparse files).
            var unsupported = OperatingSystem.IsWindows() ? err is 1 or 50 : err is 95 or 22 or 38;
            if (status == PalNative.StatusUnsupported || (status == PalNative.StatusSystem && unsupported)) return false;
            throw Pal.Error(status, err, "free space in", path);
        }
        if (!Posix.IsSupported) return false;
        if (Posix.FAllocate(handle.DangerousGetHandle(), Posix.FallocatePunchHole, offsetBytes, lengthBytes) == 0) return true;
        var errno = Marshal.GetLastPInvokeError();
        // EOPNOTSUPP, EINVAL, ENOSYS: this file system keeps its blocks.
        if (errno is 95 or 22 or 38) return false;
        throw Pal.Error(PalNative.StatusSystem, errno, "free space in", path);
    }

    /// <summary>The fault seam's turn before a directory sync (where a test fails or records it).</summary>
    public static void BeforeDirectorySync(string directory, IFaultInjector? faults)
    {
        try
        {
            faults?.BeforeSync(directory);
        }
        catch (IOException e)
        {
            throw Translate(e, "fsync", directory);
        }
    }

    /// <summary>
    /// Renames a file (or a directory) without replacing one at <paramref name="to"/>. On Windows the rename is on disk when this returns
    /// (a folder there cannot be synced); elsewhere the caller makes it durable with <see cref="SyncDirectory"/>.
    /// </summary>
    public static void Move(string from, string to, bool isDirectory = false)
    {
        if (OperatingSystem.IsWindows()) Kernel32.MoveDurably(from, to);
        else if (isDirectory) Directory.Move(from, to);
        else File.Move(from, to, overwrite: false);
    }

    /// <summary><see cref="Move"/>, a failure as a <see cref="StorageException"/>, then the fault seam's record of the new name.</summary>
    public static void Rename(string from, string to, IFaultInjector? faults, bool isDirectory = false)
    {
        try
        {
            Move(from, to, isDirectory);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw Translate(e, "rename", from);
        }
        faults?.AfterRename(from, to);
    }

    /// <summary>Makes a new or renamed entry durable: syncs the directory that holds <paramref name="path"/>.</summary>
    public static void SyncParent(string path, IFaultInjector? faults)
    {
        var parent = Path.GetDirectoryName(path);
        if (parent is not null) SyncDirectory(parent, faults);
    }

    /// <summary>Makes a create, rename or unlink in a directory durable.</summary>
    public static void SyncDirectory(string directory, IFaultInjector? faults)
    {
        if (!Pal.IsAvailable && !Posix.IsSupported) return; // Windows and macOS make directory entries durable with the file.
        BeforeDirectorySync(directory, faults);
        if (Pal.IsAvailable)
        {
            // The native layer syncs the folder where the platform needs it (not on Windows) and passes its fault seam.
            Pal.FsyncDirectory(directory);
            return;
        }
        var fd = Posix.Open(directory, 0 /* O_RDONLY */ | Posix.CloseOnExec, 0);
        if (fd < 0)
        {
            var errno = Marshal.GetLastPInvokeError();
            throw new StorageException(StorageErrorCode.IoFailure, $"Cannot open directory '{directory}' to sync it (errno {errno}).", directory, errno);
        }
        try
        {
            if (Posix.FSync(fd) != 0)
            {
                var errno = Marshal.GetLastPInvokeError();
                throw new StorageException(StorageErrorCode.IoFailure, $"fsync failed on directory '{directory}' (errno {errno}).", directory, errno);
            }
        }
        finally
        {
            Posix.Close(fd);
        }
    }

    public static StorageException Translate(Exception e, string operation, string path)
    {
        if (e is StorageException se) return se;
        var osError = e.HResult & 0xFFFF;
        // ENOSPC (28) and EDQUOT (122) on Unix; ERROR_DISK_FULL (112) and ERROR_HANDLE_DISK_FULL (39) on Windows.
        var full = OperatingSystem.IsWindows() ? osError is 112 or 39 : osError is 28 or 122;
        if (full || e.Message.Contains("No space left", StringComparison.OrdinalIgnoreCase))
        {
            return new StorageFullException($"Cannot {operation} '{path}': the disk is full. {e.Message}", path, osError, e);
        }
        return new StorageException(StorageErrorCode.IoFailure, $"Cannot {operation} '{path}': {e.Message}", path, osError, e);
    }
}
