using System.Runtime.InteropServices;

namespace Storage.Platform;

/// <summary>
/// The native platform layer's C interface (native/pal/include/pal.h), declared one to one. Struct layouts
/// match the C side's, which checks them with static assertions (native/pal/src/layout.c).
/// </summary>
internal static unsafe partial class PalNative
{
    /// <summary>Resolved to libstoragepal.so / storagepal.dll next to the application or under runtimes/{rid}/native.</summary>
    public const string Library = "storagepal";

    /// <summary>The PAL_VERSION this binding was written against.</summary>
    public const int ExpectedVersion = 3;

    public const int StatusOk = 0;
    public const int StatusSystem = 1;
    public const int StatusInvalid = 2;
    public const int StatusNoMemory = 3;
    public const int StatusUnsupported = 4;
    public const int StatusClosed = 5;

    public const uint ItemWrite = 0;
    public const uint ItemFsync = 1;
    public const uint ItemFdatasync = 2;

    public const uint WriterLowPriority = 1;

    public const uint JournalCreate = 1;
    public const uint JournalDirect = 1;
    public const uint JournalDsyncOnly = 2;

    public const uint MemRss = 1, MemPss = 2, MemPrivateDirty = 4, MemAnonymous = 8, MemSwap = 16;

    /// <summary>PAL_FAULT_MAX_KINDS: the length of the per-kind arrays of <see cref="FaultStats"/>.</summary>
    public const int FaultMaxKinds = 16;

    /// <summary>PAL_FAULT_MAX_RULES.</summary>
    public const int FaultMaxRules = 8;

    /// <summary>Pages that follow each other in the file and in memory: one page, or an overflow run.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct PageRef
    {
        public ulong PageNumber;
        public void* Data;
        public uint PageCount;
        public uint Reserved;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct WriteItem
    {
        public nint Fd;
        public PageRef* Refs;
        public uint RefCount;
        public uint PageSize;
        public uint Kind;
        public int Result;
        public ulong BytesWritten;
        public uint Runs;
        public uint Reserved;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct WriterStats
    {
        public ulong Submits;
        public ulong Writes;
        public ulong Syncs;
        public ulong ShortWrites;
        public ulong RingFullWaits;
        public int PriorityError;
        public uint Flags;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct Buffer
    {
        public void* Data;
        public ulong Length;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct MemoryStats
    {
        public ulong Rss;
        public ulong Pss;
        public ulong PrivateDirty;
        public ulong Anonymous;
        public ulong Swap;
        public uint Valid;
        public uint Reserved;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct FaultRule
    {
        public uint Kind;
        public uint Mode;
        public ulong Nth;
        public ulong Bytes;
        public int Error;
        public uint Times;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct FaultStats
    {
        public fixed ulong Calls[FaultMaxKinds];
        public fixed ulong Fired[FaultMaxKinds];
        public uint Armed;
        public uint Reserved;
    }

    [LibraryImport(Library, EntryPoint = "pal_version")]
    public static partial int Version();

    [LibraryImport(Library, EntryPoint = "pal_writer_open")]
    public static partial int WriterOpen(uint queueDepth, uint flags, out PalWriterHandle writer, out int err);

    [LibraryImport(Library, EntryPoint = "pal_writer_close")]
    public static partial int WriterClose(nint writer, out int err);

    [LibraryImport(Library, EntryPoint = "pal_writer_submit")]
    public static partial int WriterSubmit(PalWriterHandle writer, WriteItem* items, uint itemCount, out int err);

    [LibraryImport(Library, EntryPoint = "pal_writer_get_stats")]
    public static partial int WriterGetStats(PalWriterHandle writer, out WriterStats stats, out int err);

    [LibraryImport(Library, EntryPoint = "pal_journal_open", StringMarshalling = StringMarshalling.Utf8)]
    public static partial int JournalOpen(string path, uint flags, out PalJournalHandle journal, out uint mode, out int err);

    [LibraryImport(Library, EntryPoint = "pal_journal_close")]
    public static partial int JournalClose(nint journal, out int err);

    [LibraryImport(Library, EntryPoint = "pal_journal_write")]
    public static partial int JournalWrite(PalJournalHandle journal, ulong offset, Buffer* buffers, uint bufferCount, out int err);

    [LibraryImport(Library, EntryPoint = "pal_journal_presize")]
    public static partial int JournalPresize(PalJournalHandle journal, ulong size, out int err);

    [LibraryImport(Library, EntryPoint = "pal_file_allocate")]
    public static partial int FileAllocate(Microsoft.Win32.SafeHandles.SafeFileHandle fd, ulong offset, ulong length, out int err);

    [LibraryImport(Library, EntryPoint = "pal_file_punch_hole")]
    public static partial int FilePunchHole(Microsoft.Win32.SafeHandles.SafeFileHandle fd, ulong offset, ulong length, out int err);

    [LibraryImport(Library, EntryPoint = "pal_journal_recycle", StringMarshalling = StringMarshalling.Utf8)]
    public static partial int JournalRecycle(string oldPath, string newPath, out int err);

    [LibraryImport(Library, EntryPoint = "pal_hard_link", StringMarshalling = StringMarshalling.Utf8)]
    public static partial int HardLink(string existingPath, string newPath, out int err);

    [LibraryImport(Library, EntryPoint = "pal_same_file", StringMarshalling = StringMarshalling.Utf8)]
    public static partial int SameFile(string pathA, string pathB, out int same, out int err);

    [LibraryImport(Library, EntryPoint = "pal_fsync_directory", StringMarshalling = StringMarshalling.Utf8)]
    public static partial int FsyncDirectory(string path, out int err);

    [LibraryImport(Library, EntryPoint = "pal_prefetch")]
    public static partial int Prefetch(void* baseAddress, ulong firstPage, ulong pageCount, uint pageSize, out int err);

    [LibraryImport(Library, EntryPoint = "pal_read_memory_stats")]
    public static partial int ReadMemoryStats(out MemoryStats stats, out int err);

    [LibraryImport(Library, EntryPoint = "pal_fault_arm")]
    public static partial int FaultArm(FaultRule* rules, uint ruleCount, out int err);

    [LibraryImport(Library, EntryPoint = "pal_fault_disarm")]
    public static partial int FaultDisarm(out int err);

    [LibraryImport(Library, EntryPoint = "pal_fault_get_stats")]
    public static partial int FaultGetStats(out FaultStats stats, out int err);
}

/// <summary>A pal_writer: closing it completes queued work and stops its worker thread.</summary>
internal sealed class PalWriterHandle : SafeHandle
{
    public PalWriterHandle()
        : base(nint.Zero, ownsHandle: true)
    {
    }

    public override bool IsInvalid => handle == nint.Zero;

    protected override bool ReleaseHandle() => PalNative.WriterClose(handle, out _) == PalNative.StatusOk;
}

/// <summary>A pal_journal: an open journal file for durable writes.</summary>
internal sealed class PalJournalHandle : SafeHandle
{
    public PalJournalHandle()
        : base(nint.Zero, ownsHandle: true)
    {
    }

    public override bool IsInvalid => handle == nint.Zero;

    protected override bool ReleaseHandle() => PalNative.JournalClose(handle, out _) == PalNative.StatusOk;
}
