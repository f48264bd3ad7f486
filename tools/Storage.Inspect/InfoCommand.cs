using Storage.Environments;
using Storage.Journal;
using Storage.Paging;

namespace Storage.Inspect;

/// <summary><c>info</c>: format, page size, file sizes, both header slots and the journal files. Reads only.</summary>
internal static class InfoCommand
{
    public static int Run(string directory, TextWriter output)
    {
        var dataPath = Path.Combine(directory, DataFile.FileName);
        if (!File.Exists(dataPath))
        {
            output.WriteLine($"error: no data file at {dataPath}");
            return 1;
        }
        using var handle = File.OpenHandle(dataPath, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        var length = RandomAccess.GetLength(handle);
        output.WriteLine($"data file      {dataPath}");
        output.WriteLine($"size           {length:N0} bytes ({length / PageLayout.PageSizeBytes:N0} pages of {PageLayout.PageSizeBytes} bytes)");
        var page = new byte[PageLayout.PageSizeBytes];
        for (var slot = 0; slot < 2; slot++)
        {
            Array.Clear(page);
            var read = RandomAccess.Read(handle, page, slot * PageLayout.PageSizeBytes);
            var header = FileHeaderIo.TryParse(page.AsSpan(0, read), slot, out var problem);
            if (header is null)
            {
                output.WriteLine($"header slot {slot}  invalid: {problem}");
                continue;
            }
            var h = header.Value;
            output.WriteLine($"header slot {slot}  sequence {h.Sequence}, format {h.FormatVersion}, synced through tx {h.LastSyncedTransactionId}, next page {h.NextPageNumber}, journal {h.JournalFileNumber}@{h.JournalOffsetBytes}, root page {h.RootTree.RootPage}, checksum ok");
        }
        var journals = JournalEntryReader.ListFiles(Path.Combine(directory, StorageEnvironmentNames.JournalDirectory));
        output.WriteLine($"journal files  {journals.Count}");
        foreach (var (number, path) in journals)
        {
            output.WriteLine($"  {Path.GetFileName(path)}  {new FileInfo(path).Length:N0} bytes");
        }
        output.WriteLine($"locked         {(IsLocked(directory) ? "yes (a process has it open)" : "no")}");
        return 0;
    }

    private static bool IsLocked(string directory)
    {
        var lockPath = Path.Combine(directory, StorageEnvironmentNames.LockFile);
        if (!File.Exists(lockPath)) return false;
        try
        {
            using var probe = File.Open(lockPath, FileMode.Open, FileAccess.ReadWrite, FileShare.None);
            return false;
        }
        catch (IOException)
        {
            return true;
        }
    }
}
