using System.Reflection;
using System.Runtime.InteropServices;

namespace Storage.Benchmarks.Engines;

/// <summary>
/// The few liblmdb calls the comparison needs, bound to Debian's liblmdb0 (<c>liblmdb.so.0</c>, which
/// ships without the unversioned <c>liblmdb.so</c> link, hence the resolver).
/// </summary>
internal static unsafe partial class LmdbNative
{
    public const int Success = 0;
    public const int NotFound = -30798;

    /// <summary>MDB_RDONLY for mdb_txn_begin.</summary>
    public const uint ReadOnly = 0x20000;

    /// <summary>MDB_CREATE for mdb_dbi_open.</summary>
    public const uint Create = 0x40000;

    /// <summary>MDB_FIRST, from the MDB_cursor_op enum.</summary>
    public const int CursorFirst = 0;

    /// <summary>MDB_NEXT, from the MDB_cursor_op enum.</summary>
    public const int CursorNext = 8;

    private const string Library = "lmdb";
    private static readonly string[] s_fileNames = ["liblmdb.so.0", "liblmdb.so"];
    private static readonly Lock s_loadLock = new();
    private static nint s_handle;
    private static bool s_loadTried;

    /// <summary>Loads liblmdb once; false when it is not installed.</summary>
    public static bool TryLoad()
    {
        lock (s_loadLock)
        {
            if (s_loadTried) return s_handle != 0;
            s_loadTried = true;
            foreach (var fileName in s_fileNames)
            {
                if (NativeLibrary.TryLoad(fileName, out s_handle)) break;
            }
            if (s_handle == 0) return false;
            NativeLibrary.SetDllImportResolver(typeof(LmdbNative).Assembly, Resolve);
            return true;
        }
    }

    private static nint Resolve(string name, Assembly assembly, DllImportSearchPath? searchPath) =>
        name == Library ? s_handle : 0;

    [LibraryImport(Library, EntryPoint = "mdb_env_create")]
    public static partial int EnvCreate(out nint env);

    [LibraryImport(Library, EntryPoint = "mdb_env_set_mapsize")]
    public static partial int EnvSetMapSize(nint env, nuint sizeBytes);

    [LibraryImport(Library, EntryPoint = "mdb_env_set_maxdbs")]
    public static partial int EnvSetMaxDbs(nint env, uint databases);

    [LibraryImport(Library, EntryPoint = "mdb_env_open", StringMarshalling = StringMarshalling.Utf8)]
    public static partial int EnvOpen(nint env, string path, uint flags, uint mode);

    [LibraryImport(Library, EntryPoint = "mdb_env_close")]
    public static partial void EnvClose(nint env);

    [LibraryImport(Library, EntryPoint = "mdb_txn_begin")]
    public static partial int TxnBegin(nint env, nint parent, uint flags, out nint txn);

    [LibraryImport(Library, EntryPoint = "mdb_txn_commit")]
    public static partial int TxnCommit(nint txn);

    [LibraryImport(Library, EntryPoint = "mdb_txn_abort")]
    public static partial void TxnAbort(nint txn);

    [LibraryImport(Library, EntryPoint = "mdb_dbi_open", StringMarshalling = StringMarshalling.Utf8)]
    public static partial int DbiOpen(nint txn, string name, uint flags, out uint dbi);

    [LibraryImport(Library, EntryPoint = "mdb_put")]
    public static partial int Put(nint txn, uint dbi, MdbValue* key, MdbValue* data, uint flags);

    [LibraryImport(Library, EntryPoint = "mdb_get")]
    public static partial int Get(nint txn, uint dbi, MdbValue* key, MdbValue* data);

    [LibraryImport(Library, EntryPoint = "mdb_cursor_open")]
    public static partial int CursorOpen(nint txn, uint dbi, out nint cursor);

    [LibraryImport(Library, EntryPoint = "mdb_cursor_get")]
    public static partial int CursorGet(nint cursor, MdbValue* key, MdbValue* data, int operation);

    [LibraryImport(Library, EntryPoint = "mdb_cursor_close")]
    public static partial void CursorClose(nint cursor);

    [LibraryImport(Library, EntryPoint = "mdb_strerror")]
    private static partial nint StrError(int error);

    /// <summary>Throws <see cref="LmdbException"/> naming the call when <paramref name="result"/> is not success.</summary>
    public static void Check(int result, string call)
    {
        if (result != Success) throw new LmdbException(call, result, Marshal.PtrToStringUTF8(StrError(result)) ?? "unknown error");
    }
}
