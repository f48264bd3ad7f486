using System.Buffers.Binary;

namespace Storage.Backup;

/// <summary>
/// The temporary files of backups that never finished (their process was killed): named as a backup's temporary file
/// (<c>.backup-</c>, 32 hex digits, <c>.partial</c>), holding the start of a backup stream (or nothing yet), and not open
/// for writing by anyone. The next backup into the directory deletes them; anything else is left alone.
/// </summary>
/// <remarks>
/// A backup holds its temporary file open without sharing until it renames or deletes it, so a file that can be
/// opened is not being written. It is deleted while that handle is open: no backup can take it up in between, as no
/// backup ever writes a file of another's name.
/// </remarks>
internal static class AbandonedBackupFiles
{
    private const string Prefix = ".backup-";
    private const string Suffix = ".partial";

    /// <summary>The temporary name of a new backup file in <paramref name="directory"/>.</summary>
    public static string NewTemporaryPath(string directory) => Path.Combine(directory, $"{Prefix}{Guid.NewGuid():N}{Suffix}");

    /// <summary>Deletes the abandoned temporary backup files in <paramref name="directory"/>.</summary>
    public static void Remove(string directory)
    {
        foreach (var path in Directory.EnumerateFiles(directory, Prefix + "*" + Suffix))
        {
            if (!IsTemporaryName(Path.GetFileName(path))) continue;
            try
            {
                // Sharing nothing but deletion: refused while the backup writing it holds it.
                using var file = new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.Delete, 1, FileOptions.None);
                if (!StartsAsBackup(file)) continue;
                File.Delete(path);
            }
            catch (IOException)
            {
                // Being written (or gone meanwhile): not abandoned.
            }
            catch (UnauthorizedAccessException)
            {
                // Not ours to delete.
            }
        }
    }

    /// <summary>Whether <paramref name="name"/> is a temporary backup file's: the prefix, 32 lowercase hex digits, the suffix.</summary>
    public static bool IsTemporaryName(string name)
    {
        if (name.Length != Prefix.Length + 32 + Suffix.Length || !name.StartsWith(Prefix, StringComparison.Ordinal) || !name.EndsWith(Suffix, StringComparison.Ordinal)) return false;
        foreach (var c in name.AsSpan(Prefix.Length, 32))
        {
            if (c is not ((>= '0' and <= '9') or (>= 'a' and <= 'f'))) return false;
        }
        return true;
    }

    /// <summary>Empty, or its first bytes those of a backup stream's magic.</summary>
    private static bool StartsAsBackup(FileStream file)
    {
        Span<byte> magic = stackalloc byte[sizeof(ulong)];
        BinaryPrimitives.WriteUInt64LittleEndian(magic, BackupFormat.HeaderMagic);
        Span<byte> start = stackalloc byte[sizeof(ulong)];
        var read = file.ReadAtLeast(start, start.Length, throwOnEndOfStream: false);
        return read == 0 || start[..read].SequenceEqual(magic[..read]) && (read == magic.Length || file.Length == read);
    }
}
