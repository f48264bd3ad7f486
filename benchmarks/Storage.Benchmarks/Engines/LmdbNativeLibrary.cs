using System.Reflection;
using System.Runtime.InteropServices;
using LightningDB;

namespace Storage.Benchmarks.Engines;

/// <summary>
/// Where LightningDB's <c>lmdb</c> comes from: the package's own liblmdb when it loads, else the system's
/// <c>liblmdb.so.0</c> (Debian's liblmdb0). The package's Linux build needs glibc 2.38, newer than Debian 12's.
/// The calls the workloads make (environment, transactions, get, put, cursor) are the same in LMDB 0.9 and 1.0.
/// </summary>
internal static class LmdbNativeLibrary
{
    private const string LibraryName = "lmdb";
    private const string SystemFileName = "liblmdb.so.0";
    private static readonly Lock s_lock = new();
    private static bool s_registered;
    private static nint s_handle;

    /// <summary>Which library was loaded ("package" or "system <c>liblmdb.so.0</c>"); null before the first call.</summary>
    public static string? Source { get; private set; }

    /// <summary>Installs the resolver on LightningDB's assembly, once, before its first call into liblmdb.</summary>
    public static void Register()
    {
        lock (s_lock)
        {
            if (s_registered) return;
            NativeLibrary.SetDllImportResolver(typeof(LightningEnvironment).Assembly, Resolve);
            s_registered = true;
        }
    }

    /// <summary>
    /// Whether a liblmdb loads and exports <c>mdb_version</c>, found the way the resolver finds it. Asked before any
    /// LightningDB object exists: a <c>LightningEnvironment</c> whose constructor failed for want of the library
    /// throws from its finalizer, which ends the process.
    /// </summary>
    public static bool Loads()
    {
        Register();
        var handle = Resolve(LibraryName, typeof(LightningEnvironment).Assembly, searchPath: null);
        return handle != 0 && NativeLibrary.TryGetExport(handle, "mdb_version", out _);
    }

    private static nint Resolve(string name, Assembly assembly, DllImportSearchPath? searchPath)
    {
        if (name != LibraryName) return 0;
        lock (s_lock)
        {
            if (s_handle != 0) return s_handle;
            // The package's library, found the way DllImport would (this overload does not call the resolver again).
            if (NativeLibrary.TryLoad(name, assembly, searchPath, out s_handle))
            {
                Source = "package";
            }
            else if (NativeLibrary.TryLoad(SystemFileName, out s_handle))
            {
                Source = $"system {SystemFileName}";
            }
            return s_handle;
        }
    }
}
