using System.Runtime.InteropServices;

namespace Storage.Platform;

/// <summary>The few libc calls the managed backend needs that .NET does not expose (O_DIRECT, O_DSYNC, fdatasync, madvise).</summary>
internal static partial class Posix
{
    private const string LibC = "libc";

    public const int ReadWrite = 0x2;
    public const int Create = 0x40;
    public const int DataSync = 0x1000;
    public const int CloseOnExec = 0x80000;

    /// <summary>O_DIRECT differs between architectures.</summary>
    public static int Direct => RuntimeInformation.ProcessArchitecture switch
    {
        Architecture.Arm64 or Architecture.Arm => 0x10000,
        _ => 0x4000,
    };

    public const int ErrInvalid = 22;
    public const int ErrIllegalSeek = 29;
    public const int ErrNotImplemented = 38;

    [LibraryImport(LibC, EntryPoint = "open", StringMarshalling = StringMarshalling.Utf8, SetLastError = true)]
    public static partial int Open(string path, int flags, int mode);

    [LibraryImport(LibC, EntryPoint = "fdatasync", SetLastError = true)]
    public static partial int FDataSync(nint fd);

    [LibraryImport(LibC, EntryPoint = "fsync", SetLastError = true)]
    public static partial int FSync(nint fd);

    [LibraryImport(LibC, EntryPoint = "close", SetLastError = true)]
    public static partial int Close(nint fd);

    /// <summary>SYNC_FILE_RANGE_WAIT_BEFORE | WRITE | WAIT_AFTER: write a range's dirty pages out and wait for them.</summary>
    public const uint SyncFileRangeWriteAndWait = 1 | 2 | 4;

    /// <summary>SYNC_FILE_RANGE_WRITE: start writing a range's dirty pages out, without waiting for them.</summary>
    public const uint SyncFileRangeWrite = 2;

    [LibraryImport(LibC, EntryPoint = "sync_file_range", SetLastError = true)]
    public static partial int SyncFileRange(nint fd, long offset, long lengthBytes, uint flags);

    /// <summary>MADV_RANDOM: page faults in the range read only the faulted page, no read-ahead around it.</summary>
    public const int AdviseRandom = 1;

    /// <summary>MADV_WILLNEED: read the range ahead, without waiting for it.</summary>
    public const int AdviseWillNeed = 3;

    /// <summary>MADV_DONTNEED: drop the range's pages; anonymous memory reads as zeros when touched again.</summary>
    public const int AdviseDontNeed = 4;

    [LibraryImport(LibC, EntryPoint = "madvise", SetLastError = true)]
    public static unsafe partial int MAdvise(void* address, nuint lengthBytes, int advice);

    /// <summary>Reserves real blocks for a range (extending the file); returns 0 or the error number (it does not set errno).</summary>
    [LibraryImport(LibC, EntryPoint = "posix_fallocate")]
    public static partial int PosixFAllocate(nint fd, long offset, long length);

    /// <summary>FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE: give a range's blocks back, keeping the file's length.</summary>
    public const int FallocatePunchHole = 0x01 | 0x02;

    /// <summary>fallocate(2); returns 0 or -1 with errno set.</summary>
    [LibraryImport(LibC, EntryPoint = "fallocate", SetLastError = true)]
    public static partial int FAllocate(nint fd, int mode, long offset, long length);

    /// <summary>lseek whence: the next offset at or after the given one that holds data.</summary>
    public const int SeekData = 3;

    /// <summary>lseek whence: the next offset at or after the given one in a hole (the end of the file counts as one).</summary>
    public const int SeekHole = 4;

    /// <summary>lseek(2); returns the offset, or -1 with errno set (ENXIO past the last data for SEEK_DATA).</summary>
    [LibraryImport(LibC, EntryPoint = "lseek", SetLastError = true)]
    public static partial long LSeek(nint fd, long offset, int whence);

    /// <summary>POSIX_FADV_RANDOM: reads of the file get no read-ahead beyond what they ask for.</summary>
    public const int FileAdviseRandom = 1;

    /// <summary>Advice on a file's access pattern; returns 0 or the error number (it does not set errno).</summary>
    [LibraryImport(LibC, EntryPoint = "posix_fadvise")]
    public static partial int PosixFAdvise(nint fd, long offset, long length, int advice);

    /// <summary>Which OS pages of a mapped range are in memory: bit 0 of one byte per OS page.</summary>
    [LibraryImport(LibC, EntryPoint = "mincore", SetLastError = true)]
    public static unsafe partial int MinCore(void* address, nuint lengthBytes, byte* vector);

    public static bool IsSupported => OperatingSystem.IsLinux();

    /// <summary>renameat2(2) with RENAME_EXCHANGE: the two names swap what they name, atomically.</summary>
    [LibraryImport(LibC, EntryPoint = "renameat2", StringMarshalling = StringMarshalling.Utf8, SetLastError = true)]
    private static partial int RenameAt2(int oldDirectoryFd, string oldPath, int newDirectoryFd, string newPath, uint flags);

    /// <summary>Swaps two paths atomically (both must exist); 0, or the errno (ENOSYS/EINVAL where the file system cannot).</summary>
    public static int Exchange(string pathA, string pathB)
    {
        const uint RenameExchange = 2;
        try
        {
            return RenameAt2(AtCurrentDirectory, pathA, AtCurrentDirectory, pathB, RenameExchange) == 0 ? 0 : Marshal.GetLastPInvokeError();
        }
        catch (EntryPointNotFoundException)
        {
            return 38; // ENOSYS: a C library older than renameat2
        }
    }

    [LibraryImport(LibC, EntryPoint = "link", StringMarshalling = StringMarshalling.Utf8, SetLastError = true)]
    public static partial int Link(string existingPath, string newPath);

    private const int AtCurrentDirectory = -100;
    private const uint StatxNLink = 0x4;

    /// <summary>statx(2): its buffer is the same on every architecture (stx_mask at 0, stx_nlink at 16, 256 bytes in all).</summary>
    [LibraryImport(LibC, EntryPoint = "statx", StringMarshalling = StringMarshalling.Utf8, SetLastError = true)]
    private static unsafe partial int Statx(int directoryFd, string path, int flags, uint mask, byte* buffer);

    /// <summary>How many names the file at <paramref name="path"/> (a symbolic link followed) has, or null where that cannot be told.</summary>
    public static unsafe uint? LinkCount(string path)
    {
        if (!IsSupported) return null;
        var buffer = stackalloc byte[256];
        try
        {
            if (Statx(AtCurrentDirectory, path, 0, StatxNLink, buffer) != 0) return null;
        }
        catch (EntryPointNotFoundException)
        {
            return null; // a C library older than statx
        }
        var returnedMask = *(uint*)buffer;
        return (returnedMask & StatxNLink) != 0 ? *(uint*)(buffer + 16) : null;
    }
}
