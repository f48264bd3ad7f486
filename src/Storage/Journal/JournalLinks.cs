using System.Runtime.InteropServices;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>Hard links of shared journal files into members' journal folders: through the native layer where it is loaded, else libc.</summary>
internal static class JournalLinks
{
    /// <summary>Makes <paramref name="newPath"/> a second name of <paramref name="existingPath"/> (not yet durable: the caller syncs the folder).</summary>
    /// <exception cref="StorageException">The link could not be made (another file system, a link limit, no hard links), with the OS error.</exception>
    public static void Create(string existingPath, string newPath)
    {
        if (Pal.IsAvailable)
        {
            Pal.HardLink(existingPath, newPath);
        }
        else if (Posix.IsSupported)
        {
            if (Posix.Link(existingPath, newPath) != 0)
            {
                var errno = Marshal.GetLastPInvokeError();
                throw new StorageException(StorageErrorCode.IoFailure, $"Cannot hard-link '{existingPath}' as '{newPath}' (errno {errno}).", newPath, errno);
            }
        }
        else
        {
            throw new StorageException(StorageErrorCode.IoFailure, $"Hard links are not available here; '{newPath}' was not made.", newPath, 0);
        }
    }

    /// <summary>
    /// Whether a shared file of <paramref name="sharedDirectory"/> can be linked into <paramref name="memberDirectory"/>: a
    /// probe file is linked and both names removed. Null when it can; else why not (the member then keeps a journal of its own).
    /// </summary>
    public static string? Probe(string sharedDirectory, string memberDirectory)
    {
        var source = Path.Combine(sharedDirectory, "link-probe-" + Guid.NewGuid().ToString("N"));
        var target = Path.Combine(memberDirectory, Path.GetFileName(source));
        try
        {
            FileIo.OpenHandle(source, FileMode.OpenOrCreate, FileAccess.Write, FileShare.None).Dispose();
            Create(source, target);
            return null;
        }
        catch (StorageException e)
        {
            return e.Message;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return e.Message;
        }
        finally
        {
            TryDelete(target);
            TryDelete(source);
        }
    }

    /// <summary>
    /// Gives each file a second name of the same file name in <paramref name="directory"/> (not yet durable: the caller syncs
    /// the folder); false, with the names made removed again, where a link cannot be made.
    /// </summary>
    public static bool TryLinkAll(IEnumerable<string> paths, string directory)
    {
        var made = new List<string>();
        try
        {
            foreach (var path in paths)
            {
                var target = Path.Combine(directory, Path.GetFileName(path));
                Create(path, target);
                made.Add(target);
            }
            return true;
        }
        catch (StorageException)
        {
            foreach (var target in made) TryDelete(target);
            return false;
        }
    }

    private static void TryDelete(string path)
    {
        try
        {
            File.Delete(path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            // A name left behind is a second name of a file kept elsewhere, or a probe's, which opening ignores.
        }
    }
}
