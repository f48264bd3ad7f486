using System.Security.Cryptography;
using System.Text;
using Microsoft.Win32.SafeHandles;
using Storage.Faults;
using Storage.Platform;

namespace Storage.Groups;

/// <summary>
/// Puts one directory in the place of another beside it where the two cannot exchange names in one step (Windows, or a
/// file system that refuses renameat2's RENAME_EXCHANGE). Before anything moves, an intent file beside them names the
/// live directory, the replacement and the name the live one is moved aside to, and is made durable; then the live
/// directory is moved aside, the replacement moved into its place, and the intent removed, each step made durable before
/// the next. Opening the live directory, or the replacement's, first completes a replacement a crash interrupted (see
/// <see cref="CompleteInterrupted"/>), so the live name opens the old version whole or the new one whole, never nothing.
/// </summary>
internal static class BranchReplacement
{
    /// <summary>The intent file is the live directory's name with this after it, in the same parent.</summary>
    public const string IntentExtension = ".replacing";

    private const string AsideInfix = ".replaced-";
    private const string Magic = "storage branch replacement 1";

    /// <summary>What an intent file says: three names in <paramref name="Parent"/>.</summary>
    internal sealed record Intent(string Parent, string Live, string Replacement, string Aside)
    {
        public string LivePath => Path.Combine(Parent, Live);

        public string ReplacementPath => Path.Combine(Parent, Replacement);

        public string AsidePath => Path.Combine(Parent, Aside);
    }

    public static string IntentPath(string liveDirectory) => Path.TrimEndingDirectorySeparator(liveDirectory) + IntentExtension;

    /// <summary>The file a replaced version gets in its folder once the new one is in place: the folder is ours and obsolete.</summary>
    public const string ObsoleteMarker = "REPLACED";

    /// <summary>Names of the two directories that an intent file can hold (a bare name, one line), checked before anything is closed.</summary>
    /// <exception cref="ArgumentException">A name the intent could not hold.</exception>
    public static void CheckNames(string liveDirectory, string replacementDirectory)
    {
        foreach (var name in new[] { Path.GetFileName(liveDirectory), Path.GetFileName(replacementDirectory) })
        {
            if (!IsBareName(name)) throw new ArgumentException($"'{name}' cannot be named in a replacement intent (a bare directory name without line breaks or separators).");
        }
    }

    private static bool IsBareName(string name) =>
        name.Length != 0 && name is not ("." or "..") && name.IndexOfAny(['/', '\\', '\0', '\n', '\r']) < 0;

    /// <summary>Names of directories compare as the file system does: without case on Windows and macOS.</summary>
    private static StringComparison NameComparison => OperatingSystem.IsWindows() || OperatingSystem.IsMacOS() ? StringComparison.OrdinalIgnoreCase : StringComparison.Ordinal;

    /// <summary>
    /// Moves <paramref name="replacementDirectory"/> into <paramref name="liveDirectory"/>'s place (both closed, in the same
    /// parent), marks the old version obsolete and deletes it (unless something still holds a file of it open, where open
    /// files cannot be deleted: then it is deleted by <see cref="DeleteObsoleteVersions"/> later).
    /// The intent file is held locked throughout, so that an open completing the same replacement waits its turn.
    /// <paramref name="step"/> is called after each durable step.
    /// </summary>
    /// <exception cref="StorageException">A call failed. If nothing had moved yet, or the live directory could be moved
    /// back, nothing was replaced and the intent is gone; otherwise the intent stays, and the next open completes it.</exception>
    public static void Replace(string liveDirectory, string replacementDirectory, IFaultInjector? faults, Action<string>? step, string? asideName = null)
    {
        var parent = Path.GetDirectoryName(liveDirectory)!;
        // The caller refused an intent already there; one made since fails the rename into place, which replaces nothing.
        var intentPath = IntentPath(liveDirectory);
        string aside;
        if (asideName is not null)
        {
            aside = Path.Combine(parent, asideName);
        }
        else
        {
            do
            {
                aside = Path.TrimEndingDirectorySeparator(liveDirectory) + AsideInfix + Convert.ToHexStringLower(RandomNumberGenerator.GetBytes(4));
            }
            while (Path.Exists(aside));
        }
        var intent = new Intent(parent, Path.GetFileName(liveDirectory), Path.GetFileName(replacementDirectory), Path.GetFileName(aside));
        using var held = WriteIntent(intentPath, intent, faults);
        step?.Invoke("intent written");
        try
        {
            MoveDurably(liveDirectory, aside, parent, faults);
        }
        catch when (Directory.Exists(liveDirectory))
        {
            // The live directory did not move (a rename is atomic): no replacement.
            RemoveIntent(intentPath, faults);
            throw;
        }
        step?.Invoke("live moved aside");
        try
        {
            MoveDurably(replacementDirectory, liveDirectory, parent, faults);
        }
        catch when (!Path.Exists(liveDirectory) && Directory.Exists(replacementDirectory))
        {
            // The replacement could not move in: the live directory goes back, and the intent with it (if that fails too,
            // the intent stays and the next open completes the replacement).
            MoveDurably(aside, liveDirectory, parent, faults);
            RemoveIntent(intentPath, faults);
            throw;
        }
        step?.Invoke("replacement moved in");
        Finish(intent, faults, step);
    }

    /// <summary>Renames a directory within <paramref name="parent"/> and makes the new name durable.</summary>
    private static void MoveDurably(string from, string to, string parent, IFaultInjector? faults)
    {
        FileIo.Rename(from, to, faults, isDirectory: true);
        FileIo.SyncDirectory(parent, faults);
    }

    /// <summary>
    /// The new version is in place: the old one is marked obsolete (durably) before the intent goes, so that it is provably
    /// ours to delete whenever it can be; then the intent is removed (an intent left while the new version is in use would
    /// name a swap that must not happen again), and only then the old version deleted if it can be now (or by
    /// <see cref="DeleteObsoleteVersions"/> at a later open). Deleted first, a crash before the intent went would leave an
    /// intent with the live directory and nothing aside, which reads as a replacement not begun: a directory of the
    /// replacement's name made later would be moved in over the live version.
    /// </summary>
    private static void Finish(Intent intent, IFaultInjector? faults, Action<string>? step)
    {
        var aside = Directory.Exists(intent.AsidePath);
        if (aside)
        {
            var marker = Path.Combine(intent.AsidePath, ObsoleteMarker);
            using (var handle = FileIo.OpenReadWrite(marker, create: true))
            {
                FileIo.Write(handle, marker, Encoding.UTF8.GetBytes($"replaced by {intent.Live}\n"), 0, faults);
                FileIo.SyncData(handle, marker, faults);
            }
            FileIo.SyncDirectory(intent.AsidePath, faults);
            step?.Invoke("old version marked");
        }
        RemoveIntent(IntentPath(intent.LivePath), faults);
        step?.Invoke("intent removed");
        if (aside) TryDelete(intent.AsidePath);
    }

    /// <summary>
    /// Before <paramref name="directory"/> is opened: completes a replacement of it, or by it, that a crash interrupted,
    /// moving the replacement into the live directory's place (whether or not the live one had been moved aside yet), and
    /// deletes old versions of it marked obsolete that could not be deleted before. Nothing happens when no intent names
    /// the directory.
    /// </summary>
    /// <exception cref="StorageCorruptedException">The directory's own intent file is damaged, or what it names is in a
    /// state no replacement leaves (then nothing is touched and the open must not go on).</exception>
    /// <exception cref="StorageException">The intent cannot be read (<see cref="StorageErrorCode.IoFailure"/>), or another
    /// process or thread is replacing the directory or completing its replacement (<see cref="StorageErrorCode.EnvironmentLocked"/>).</exception>
    public static void CompleteInterrupted(string directory, IFaultInjector? faults)
    {
        directory = Path.TrimEndingDirectorySeparator(directory);
        var parent = Path.GetDirectoryName(directory);
        if (string.IsNullOrEmpty(parent)) return;
        var name = Path.GetFileName(directory);
        if (File.Exists(IntentPath(directory)))
        {
            Complete(directory, name, faults);
        }
        else
        {
            // Opened by the replacement's name: an intent elsewhere in the parent may name it.
            string[] intents;
            try
            {
                intents = Directory.GetFiles(parent, "*" + IntentExtension);
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                intents = [];
            }
            foreach (var path in intents)
            {
                var intent = TryReadIntent(path, out var readError);
                if (readError is not null)
                {
                    // Held by a replacement under way, or unreadable: whether it names this directory is unknown.
                    throw new StorageException(StorageErrorCode.EnvironmentLocked,
                        $"The replacement intent '{path}' beside '{directory}' cannot be read ({readError.Message}): a replacement may be moving this directory; try again once it is done.",
                        path, readError.HResult & 0xFFFF, readError);
                }
                // Another directory's damaged intent is that directory's open to refuse.
                if (intent is not null && string.Equals(intent.Replacement, name, NameComparison)) Complete(intent.LivePath, name, faults);
            }
        }
        DeleteObsoleteVersions(directory);
    }

    /// <summary>Completes the replacement of <paramref name="liveDirectory"/> with its intent file held locked, from what the intent and the directories say then.</summary>
    private static void Complete(string liveDirectory, string openedName, IFaultInjector? faults)
    {
        var intentPath = IntentPath(liveDirectory);
        SafeFileHandle held;
        try
        {
            held = LockIntent(intentPath);
        }
        catch (FileNotFoundException)
        {
            return; // completed meanwhile, by whoever held it
        }
        catch (DirectoryNotFoundException)
        {
            return;
        }
        using (held)
        {
            var intent = ReadIntent(held, intentPath) ?? throw new StorageCorruptedException(
                $"The replacement intent '{intentPath}' is damaged: whether '{liveDirectory}' or its replacement holds the version to open is unknown, so neither is opened ('{openedName}' was being opened).", intentPath);
            bool live = Directory.Exists(intent.LivePath), replacement = Directory.Exists(intent.ReplacementPath), aside = Path.Exists(intent.AsidePath);
            // The old version is marked only once the new one is in place: a folder of the replacement's name now is a
            // later one (a next rebuild), not this replacement's.
            if (live && aside && File.Exists(Path.Combine(intent.AsidePath, ObsoleteMarker))) replacement = false;
            if (live && replacement && !aside)
            {
                MoveDurably(intent.LivePath, intent.AsidePath, intent.Parent, faults);
                (live, aside) = (false, true);
            }
            if (!live && replacement && aside)
            {
                MoveDurably(intent.ReplacementPath, intent.LivePath, intent.Parent, faults);
                (live, replacement) = (true, false);
            }
            if (!live || replacement)
            {
                throw new StorageCorruptedException(
                    $"The replacement of '{intent.LivePath}' by '{intent.ReplacementPath}' was interrupted, and neither it nor the version moved aside to '{intent.AsidePath}' is where a replacement leaves it; nothing was moved.",
                    intentPath);
            }
            Finish(intent, faults, step: null);
        }
    }

    /// <summary>
    /// Deletes the versions of <paramref name="liveDirectory"/> replaced earlier that could not be deleted then: folders beside
    /// it named as this class names them and holding the <see cref="ObsoleteMarker"/> file that names it. Best effort.
    /// </summary>
    public static void DeleteObsoleteVersions(string liveDirectory)
    {
        liveDirectory = Path.TrimEndingDirectorySeparator(liveDirectory);
        var parent = Path.GetDirectoryName(liveDirectory);
        if (string.IsNullOrEmpty(parent)) return;
        string[] candidates;
        try
        {
            candidates = Directory.GetDirectories(parent, Path.GetFileName(liveDirectory) + AsideInfix + "*");
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return;
        }
        var expected = $"replaced by {Path.GetFileName(liveDirectory)}\n";
        foreach (var candidate in candidates)
        {
            try
            {
                if (File.ReadAllText(Path.Combine(candidate, ObsoleteMarker), Encoding.UTF8) == expected) TryDelete(candidate);
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                // No marker (a replacement that did not get that far keeps its intent) or not readable: not provably ours.
            }
        }
    }

    /// <summary>
    /// The old version, closed and moved aside: ours and obsolete. Left where it is if it cannot go now (false): a reader of
    /// it, or the group's shared journal, may still hold one of its files open where open files cannot be deleted.
    /// </summary>
    public static bool TryDelete(string directory)
    {
        try
        {
            if (!Directory.Exists(directory)) return true;
            // The obsolete mark goes last: a folder left half deleted (a file still open) stays provably ours.
            var marker = Path.Combine(directory, ObsoleteMarker);
            foreach (var entry in Directory.EnumerateFileSystemEntries(directory).ToList())
            {
                if (string.Equals(entry, marker, StringComparison.Ordinal)) continue;
                if (Directory.Exists(entry)) Directory.Delete(entry, recursive: true);
                else File.Delete(entry);
            }
            // Where a file still open elsewhere is only marked for deletion (Windows), a delete can report success and leave
            // the name: the mark stays until nothing else is left.
            if (Directory.EnumerateFileSystemEntries(directory).Any(entry => !string.Equals(entry, marker, StringComparison.Ordinal))) return false;
            Directory.Delete(directory, recursive: true);
            return !Directory.Exists(directory);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return false;
        }
    }

    /// <summary>
    /// Opens an intent file held by no one else (an exclusive lock on Unix; on Windows a handle sharing only deletion, so
    /// that the holder can still rename and delete the file). A holder elsewhere fails it with
    /// <see cref="StorageErrorCode.EnvironmentLocked"/>; a missing file throws <see cref="FileNotFoundException"/>.
    /// </summary>
    private static SafeFileHandle LockIntent(string path, FileMode mode = FileMode.Open)
    {
        try
        {
            return File.OpenHandle(path, mode, FileAccess.ReadWrite, OperatingSystem.IsWindows() ? FileShare.Delete : FileShare.None);
        }
        catch (Exception e) when (e is not (FileNotFoundException or DirectoryNotFoundException) && e is IOException)
        {
            throw new StorageException(StorageErrorCode.EnvironmentLocked,
                $"'{path}' is held by another process or thread replacing the directory, or completing its replacement; try again once it is done.", path, e.HResult & 0xFFFF, e);
        }
        catch (UnauthorizedAccessException e)
        {
            throw FileIo.Translate(e, "open", path);
        }
    }

    /// <summary>Writes the intent whole under a temporary name, syncs it and renames it into place; returns it held locked.</summary>
    private static SafeFileHandle WriteIntent(string intentPath, Intent intent, IFaultInjector? faults)
    {
        var bytes = Encode(intent);
        var temporary = intentPath + ".new";
        // A temporary file of this name is what a crash during an earlier replacement left: nothing else writes it.
        if (File.Exists(temporary)) Journal.JournalFiles.Delete(temporary, faults);
        var handle = LockIntent(temporary, FileMode.CreateNew);
        try
        {
            FileIo.Write(handle, temporary, bytes, 0, faults);
            FileIo.SyncData(handle, temporary, faults);
            FileIo.Rename(temporary, intentPath, faults);
            FileIo.SyncDirectory(intent.Parent, faults);
            return handle;
        }
        catch
        {
            handle.Dispose();
            throw;
        }
    }

    private static void RemoveIntent(string intentPath, IFaultInjector? faults) => Journal.JournalFiles.Delete(intentPath, faults);

    internal static byte[] Encode(Intent intent)
    {
        var body = $"{Magic}\nlive={intent.Live}\nreplacement={intent.Replacement}\naside={intent.Aside}\n";
        var bytes = Encoding.UTF8.GetBytes(body);
        return [.. bytes, .. Encoding.ASCII.GetBytes($"crc={Crc32C.Compute(bytes):x8}\n")];
    }

    /// <summary>The intent in <paramref name="path"/>; null when it is damaged or cannot be read (<paramref name="readError"/> says which).</summary>
    internal static Intent? TryReadIntent(string path, out Exception? readError)
    {
        readError = null;
        try
        {
            return Decode(File.ReadAllBytes(path), path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            readError = e;
            return null;
        }
    }

    /// <summary>The intent read through the handle that holds it; null when it is damaged.</summary>
    private static Intent? ReadIntent(SafeFileHandle handle, string path)
    {
        var length = RandomAccess.GetLength(handle);
        if (length > 4096) return null;
        var bytes = new byte[length];
        var read = 0;
        while (read < bytes.Length)
        {
            var n = FileIo.Read(handle, path, bytes.AsSpan(read), read);
            if (n == 0) return null;
            read += n;
        }
        return Decode(bytes, path);
    }

    private static Intent? Decode(byte[] bytes, string path)
    {
        var text = Encoding.UTF8.GetString(bytes);
        var crcAt = text.LastIndexOf("crc=", StringComparison.Ordinal);
        if (crcAt < 0 || !text.EndsWith('\n')) return null;
        var body = bytes.AsSpan(0, Encoding.UTF8.GetByteCount(text.AsSpan(0, crcAt)));
        if (!uint.TryParse(text.AsSpan(crcAt + 4, text.Length - crcAt - 5), System.Globalization.NumberStyles.HexNumber, null, out var crc) || crc != Crc32C.Compute(body)) return null;
        var lines = text[..crcAt].Split('\n');
        if (lines.Length != 5 || lines[0] != Magic || lines[4].Length != 0) return null;
        var live = Value(lines[1], "live=");
        var replacement = Value(lines[2], "replacement=");
        var aside = Value(lines[3], "aside=");
        if (live is null || replacement is null || aside is null) return null;
        return new Intent(Path.GetDirectoryName(Path.GetFullPath(path))!, live, replacement, aside);

        static string? Value(string line, string key)
        {
            if (!line.StartsWith(key, StringComparison.Ordinal)) return null;
            var name = line[key.Length..];
            // A bare name in the intent's own folder, nothing else.
            return IsBareName(name) ? name : null;
        }
    }
}
