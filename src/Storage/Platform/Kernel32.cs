using System.Runtime.InteropServices;

namespace Storage.Platform;

/// <summary>The Windows calls the managed backend needs that .NET does not expose.</summary>
internal static partial class Kernel32
{
    private const uint MoveFileWriteThrough = 0x8;

    [LibraryImport("kernel32.dll", EntryPoint = "MoveFileExW", StringMarshalling = StringMarshalling.Utf16, SetLastError = true)]
    [return: MarshalAs(UnmanagedType.Bool)]
    private static partial bool MoveFileEx(string existingFileName, string newFileName, uint flags);

    /// <summary>
    /// Renames a file, never replacing one (no <c>MOVEFILE_REPLACE_EXISTING</c>), and returns only once the rename is on disk
    /// (<c>MOVEFILE_WRITE_THROUGH</c>): Windows cannot sync a folder, so this is how a rename is made durable there.
    /// </summary>
    public static void MoveDurably(string from, string to)
    {
        if (MoveFileEx(from, to, MoveFileWriteThrough)) return;
        var error = Marshal.GetLastPInvokeError();
        // As .NET's own file calls report a Win32 error: an IOException whose HResult carries the error code.
        throw new IOException($"Cannot rename '{from}' to '{to}': {Marshal.GetPInvokeErrorMessage(error)}", unchecked((int)0x80070000) | error);
    }
}
