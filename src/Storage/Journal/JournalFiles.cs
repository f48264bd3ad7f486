using Microsoft.Win32.SafeHandles;
using Storage.Faults;
using Storage.Platform;

namespace Storage.Journal;

/// <summary>Whose a file in a journal folder is, judged from its first block.</summary>
internal enum JournalFileOwnership
{
    /// <summary>A journal file header of this environment.</summary>
    Own,

    /// <summary>The first block is zero: a spare never used (only the engine creates files of that name).</summary>
    Blank,

    /// <summary>A valid journal file header of another environment.</summary>
    Foreign,

    /// <summary>
    /// A shared file of an environment group (written by the group's root, another environment): in this environment's folder
    /// it is this environment's link, and removing it removes only that name, which the other members' links do not need.
    /// </summary>
    SharedLink,

    /// <summary>Neither: damaged, or not a journal file at all. Left alone.</summary>
    Unknown,
}

/// <summary>Reading journal file headers, and the rule for which files the engine may delete.</summary>
internal static class JournalFiles
{
    /// <summary>Reads a journal file's header block; null (with the reason) when it has no valid header.</summary>
    public static JournalFileHeader? ReadHeader(string path, out long lengthBytes, out string? problem)
    {
        using var handle = OpenRead(path);
        return ReadHeader(handle, path, out lengthBytes, out problem);
    }

    public static JournalFileHeader? ReadHeader(SafeFileHandle handle, string path, out long lengthBytes, out string? problem)
    {
        lengthBytes = RandomAccess.GetLength(handle);
        Span<byte> block = stackalloc byte[JournalFileHeader.SizeBytes];
        var read = FileIo.Read(handle, path, block, 0);
        return JournalFileHeader.TryParse(block[..read], out problem);
    }

    /// <summary>
    /// Whether the engine may treat the file as its own. It deletes only files that are its own and obsolete; a file
    /// it cannot prove is its own (another environment's, or damaged beyond recognition) is left where it is.
    /// </summary>
    public static JournalFileOwnership Ownership(string path, ulong environmentId)
    {
        Span<byte> block = stackalloc byte[JournalFileHeader.BlockBytes];
        int read;
        try
        {
            using var handle = OpenRead(path);
            read = FileIo.Read(handle, path, block, 0);
        }
        catch (StorageException)
        {
            return JournalFileOwnership.Unknown;
        }
        var header = JournalFileHeader.TryParse(block[..read], out _);
        if (header is { } h)
        {
            if (h.EnvironmentId == environmentId) return JournalFileOwnership.Own;
            return h.IsShared ? JournalFileOwnership.SharedLink : JournalFileOwnership.Foreign;
        }
        return read == block.Length && !block.ContainsAnyExcept((byte)0) ? JournalFileOwnership.Blank : JournalFileOwnership.Unknown;
    }

    /// <summary>Deletes a file the caller proved obsolete and its own, and makes the unlink durable.</summary>
    public static void Delete(string path, IFaultInjector? faults)
    {
        try
        {
            File.Delete(path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw FileIo.Translate(e, "delete", path);
        }
        faults?.AfterDelete(path);
        FileIo.SyncParent(path, faults);
    }

    public static SafeFileHandle OpenRead(string path)
    {
        try
        {
            return File.OpenHandle(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw FileIo.Translate(e, "open", path);
        }
    }
}
