using System.Security.Cryptography;
using System.Text;
using Storage.Paging;
using Storage.Platform;

namespace Storage.Environments;

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

    /// <summary>
    /// Moves <paramref name="replacementDirectory"/> into <paramref name="liveDirectory"/>'s place (both closed, in the same
    /// parent) and deletes the old version and the intent (unless something still holds a file of the old version open,
    /// where open files cannot be deleted: then both stay until <see cref="CompleteInterrupted"/> deletes them); returns where
    /// the old version went. <paramref name="step"/> is called after each durable step.
    /// </summary>
    /// <exception cref="StorageException">A call failed. If nothing had moved yet, or the live directory could be moved
    /// back, nothing was replaced and the intent is gone; otherwise the intent stays, and the next open completes it.</exception>
    public static string Replace(string liveDirectory, string replacementDirectory, IFaultInjector? faults, Action<string>? step)
    {
        var parent = Path.GetDirectoryName(liveDirectory)!;
        var intentPath = IntentPath(liveDirectory);
        if (File.Exists(intentPath))
        {
            throw new StorageException(StorageErrorCode.IoFailure,
                $"'{intentPath}' is there already: an earlier replacement of '{liveDirectory}' is unfinished (opening it completes it).", intentPath, osError: 0);
        }
        string aside;
        do
        {
            aside = Path.TrimEndingDirectorySeparator(liveDirectory) + AsideInfix + Convert.ToHexStringLower(RandomNumberGenerator.GetBytes(4));
        }
        while (Path.Exists(aside));
        var intent = new Intent(parent, Path.GetFileName(liveDirectory), Path.GetFileName(replacementDirectory), Path.GetFileName(aside));
        WriteIntent(intentPath, intent, faults);
        step?.Invoke("intent written");
        try
        {
            FileIo.Rename(liveDirectory, aside, faults, isDirectory: true);
            FileIo.SyncDirectory(parent, faults);
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
            FileIo.Rename(replacementDirectory, liveDirectory, faults, isDirectory: true);
            FileIo.SyncDirectory(parent, faults);
        }
        catch when (!Path.Exists(liveDirectory) && Directory.Exists(replacementDirectory))
        {
            // The replacement could not move in: the live directory goes back, and the intent with it (if that fails too,
            // the intent stays and the next open completes the replacement).
            FileIo.Rename(aside, liveDirectory, faults, isDirectory: true);
            FileIo.SyncDirectory(parent, faults);
            RemoveIntent(intentPath, faults);
            throw;
        }
        step?.Invoke("replacement moved in");
        // The old version goes before the intent does, so that nothing is left behind for good: while something still
        // holds a file of it open (where open files cannot be deleted: Windows, a shared journal file still in use by the
        // group), the intent stays, and the next open of the branch, or the group's close, deletes both.
        if (TryDelete(aside)) RemoveIntent(intentPath, faults);
        return aside;
    }

    /// <summary>
    /// Before <paramref name="directory"/> is opened: completes a replacement of it, or by it, that a crash interrupted,
    /// moving the replacement into the live directory's place (whether or not the live one had been moved aside yet), and
    /// deletes the old version it moved aside. Nothing happens when no intent names the directory.
    /// </summary>
    /// <exception cref="StorageCorruptedException">The directory's own intent file is damaged, or what it names is in a
    /// state no replacement leaves (then nothing is touched and the open must not go on).</exception>
    public static void CompleteInterrupted(string directory, IFaultInjector? faults)
    {
        directory = Path.TrimEndingDirectorySeparator(directory);
        var parent = Path.GetDirectoryName(directory);
        if (string.IsNullOrEmpty(parent)) return;
        var own = IntentPath(directory);
        if (File.Exists(own))
        {
            Complete(ReadIntent(own) ?? throw new StorageCorruptedException(
                $"The replacement intent '{own}' is damaged: whether '{directory}' or its replacement holds the version to open is unknown, so neither is opened.", own), faults);
            return;
        }
        // Opened by the replacement's name: an intent elsewhere in the parent may name it.
        string[] intents;
        try
        {
            intents = Directory.GetFiles(parent, "*" + IntentExtension);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return;
        }
        var name = Path.GetFileName(directory);
        foreach (var path in intents)
        {
            // Another directory's damaged intent is that directory's open to refuse.
            if (ReadIntent(path) is { } intent && string.Equals(intent.Replacement, name, StringComparison.Ordinal)) Complete(intent, faults);
        }
    }

    private static void Complete(Intent intent, IFaultInjector? faults)
    {
        bool live = Directory.Exists(intent.LivePath), replacement = Directory.Exists(intent.ReplacementPath), aside = Path.Exists(intent.AsidePath);
        if (live && replacement && !aside)
        {
            FileIo.Rename(intent.LivePath, intent.AsidePath, faults, isDirectory: true);
            FileIo.SyncDirectory(intent.Parent, faults);
            (live, aside) = (false, true);
        }
        if (!live && replacement && aside)
        {
            FileIo.Rename(intent.ReplacementPath, intent.LivePath, faults, isDirectory: true);
            FileIo.SyncDirectory(intent.Parent, faults);
            (live, replacement) = (true, false);
        }
        if (!live || replacement)
        {
            throw new StorageCorruptedException(
                $"The replacement of '{intent.LivePath}' by '{intent.ReplacementPath}' was interrupted, and neither it nor the version moved aside to '{intent.AsidePath}' is where a replacement leaves it; nothing was moved.",
                IntentPath(intent.LivePath));
        }
        if (TryDelete(intent.AsidePath)) RemoveIntent(IntentPath(intent.LivePath), faults);
    }

    /// <summary>
    /// The old version, closed and moved aside: ours and obsolete. Left where it is if it cannot go now (false): a reader of
    /// it, or the group's shared journal, may still hold one of its files open where open files cannot be deleted.
    /// </summary>
    public static bool TryDelete(string directory)
    {
        try
        {
            if (Directory.Exists(directory)) Directory.Delete(directory, recursive: true);
            // Where a file still open elsewhere is only marked for deletion (Windows), the folder may outlive a delete
            // that reported success.
            return !Directory.Exists(directory);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return false;
        }
    }

    private static void WriteIntent(string intentPath, Intent intent, IFaultInjector? faults)
    {
        var bytes = Encode(intent);
        // Written whole under a temporary name and renamed: the intent's name only ever holds a whole, synced intent.
        var temporary = intentPath + ".new";
        // A temporary file of this name is what a crash during an earlier replacement left: nothing else writes it.
        if (File.Exists(temporary)) Journal.JournalFiles.Delete(temporary, faults);
        using (var handle = FileIo.OpenReadWrite(temporary, create: true))
        {
            FileIo.Write(handle, temporary, bytes, 0, faults);
            FileIo.SyncData(handle, temporary, faults);
        }
        FileIo.Rename(temporary, intentPath, faults);
        FileIo.SyncDirectory(intent.Parent, faults);
    }

    private static void RemoveIntent(string intentPath, IFaultInjector? faults) => Journal.JournalFiles.Delete(intentPath, faults);

    internal static byte[] Encode(Intent intent)
    {
        var body = $"{Magic}\nlive={intent.Live}\nreplacement={intent.Replacement}\naside={intent.Aside}\n";
        var bytes = Encoding.UTF8.GetBytes(body);
        return [.. bytes, .. Encoding.ASCII.GetBytes($"crc={Crc32C.Compute(bytes):x8}\n")];
    }

    /// <summary>The intent in <paramref name="path"/>, or null when it is damaged (or unreadable).</summary>
    internal static Intent? ReadIntent(string path)
    {
        byte[] bytes;
        try
        {
            bytes = File.ReadAllBytes(path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return null;
        }
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
            return name.Length == 0 || name is "." or ".." || name.IndexOfAny(['/', '\\', '\0']) >= 0 ? null : name;
        }
    }
}
