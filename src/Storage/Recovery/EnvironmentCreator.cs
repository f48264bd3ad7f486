using System.Security.Cryptography;
using Storage.Allocation;
using Storage.Faults;
using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
using Storage.State;
using Storage.Trees;

namespace Storage.Recovery;

/// <summary>
/// Writes a new, empty environment: both headers, region 0's free-space bitmaps and the root tree's
/// leaf, into a temporary file that is synced and renamed into place, so a crash leaves either no
/// environment or a whole one. The first journal file is put in place before the rename: a data file
/// always has the journal file its header points to.
/// </summary>
internal static unsafe class EnvironmentCreator
{
    /// <summary>After the data file's name: the file a creation writes before renaming it into place.</summary>
    public const string TemporarySuffix = ".new";

    public static void Create(string directory, PlatformIo io, long journalFileSizeBytes, IFaultInjector? faults)
    {
        var finalPath = Path.Combine(directory, DataFile.FileName);
        var temporaryPath = finalPath + TemporarySuffix;
        // A temporary file of this name is what a crash during an earlier creation left: nothing else writes it.
        if (File.Exists(temporaryPath)) JournalFiles.Delete(temporaryPath, faults);

        using var store = new BootstrapPageStore(FreeSpaceLayout.FirstUsablePage(0));
        var root = BTree.Create(store, treeId: 0);
        var nextPage = store.NextPageNumber;
        Span<byte> id = stackalloc byte[8];
        RandomNumberGenerator.Fill(id);
        var environmentId = BitConverter.ToUInt64(id) | 1;

        using (var handle = FileIo.OpenReadWrite(temporaryPath, create: true))
        {
            var fileBytes = AlignedBuffer.AlignUp(Math.Max(nextPage * PageLayout.PageSizeBytes, 1L << 20));
            FileIo.SetLength(handle, temporaryPath, fileBytes, faults);
            faults?.AfterSetLength(temporaryPath, fileBytes);
            using var page = new AlignedBuffer(PageLayout.PageSizeBytes);
            for (var i = 0; i < FreeSpaceLayout.BitmapPagesPerRegion; i++)
            {
                var pageNumber = 2 + i;
                FreeSpaceLayout.InitializeBitmapPage(page.Pointer, pageNumber);
                WritePage(handle, temporaryPath, page.Pointer, pageNumber, faults);
            }
            foreach (var (pageNumber, pointer) in store.Pages)
            {
                WritePage(handle, temporaryPath, (byte*)pointer, pageNumber, faults);
            }
            FileIo.SyncData(handle, temporaryPath, faults);
        }

        using (var file = DataFile.Open(temporaryPath, io, faults))
        {
            var rootHeader = root.ToHeader();
            for (var sequence = 0; sequence < 2; sequence++)
            {
                // Journal file 1, right after its header block, is where the first transaction's entry will go.
                var created = new CommitRecord(TransactionId: 0, FirstJournalNumber, JournalFileHeader.BlockBytes, nextPage, rootHeader);
                FileHeaderIo.Write(file, FileHeader.Synced(environmentId, sequence, created));
            }
            file.Sync();
        }
        CreateFirstJournal(directory, environmentId, io, journalFileSizeBytes, firstTransactionId: 1, faults);
        FileIo.Rename(temporaryPath, finalPath, faults);
        FileIo.SyncDirectory(directory, faults);
    }

    public const long FirstJournalNumber = 1;

    /// <summary>
    /// Finishes a creation that stopped between putting the first journal file in place and renaming the data file:
    /// the temporary data file is whole (both headers valid) and the only journal file is the empty first one of the
    /// same environment. Returns false when the directory is not in that state.
    /// </summary>
    public static bool TryFinishInterrupted(string directory, IFaultInjector? faults)
    {
        var finalPath = Path.Combine(directory, DataFile.FileName);
        var temporaryPath = finalPath + TemporarySuffix;
        if (!File.Exists(temporaryPath)) return false;
        var journals = JournalEntryReader.ListFiles(Path.Combine(directory, StorageEnvironmentNames.JournalDirectory));
        if (journals.Count != 1 || journals[0].Number != FirstJournalNumber) return false;
        ulong? environmentId = null;
        using (var handle = FileIo.OpenReadWrite(temporaryPath, create: false))
        {
            Span<byte> page = stackalloc byte[PageLayout.PageSizeBytes];
            for (var slot = 0; slot < 2; slot++)
            {
                var read = FileIo.Read(handle, temporaryPath, page, slot * (long)PageLayout.PageSizeBytes);
                if (FileHeaderIo.TryParse(page[..read], slot, out _) is not { } header || header.LastSyncedTransactionId != 0) return false;
                if (environmentId is not null && environmentId != header.EnvironmentId) return false;
                environmentId = header.EnvironmentId;
            }
        }
        var journal = JournalFiles.ReadHeader(journals[0].Path, out var length, out _);
        if (journal is not { } j || j.EnvironmentId != environmentId || j.FileNumber != FirstJournalNumber || j.SizeBytesOfFile != length) return false;
        using (var reader = new JournalEntryReader(journals[0].Path, FirstJournalNumber))
        {
            if (reader.TryRead(JournalFileHeader.BlockBytes, environmentId.Value, out _, out _, out _)) return false;
        }
        FileIo.Rename(temporaryPath, finalPath, faults);
        FileIo.SyncDirectory(directory, faults);
        return true;
    }

    /// <summary>
    /// Makes a data file whose pages are already in place (a restored backup) whole: both headers, synced at
    /// <paramref name="transactionId"/> and naming the first journal file, which is created empty for the
    /// transactions after it.
    /// </summary>
    /// <remarks>With <c>createJournal</c> false the caller has written the first journal file, with entries to replay.</remarks>
    public static void FinishRestored(string directory, string dataPath, PlatformIo io, ulong environmentId, long transactionId, long nextPageNumber,
        TreeHeader rootTree, long journalFileSizeBytes, bool createJournal = true)
    {
        using (var file = DataFile.Open(dataPath, io, faults: null))
        {
            var record = new CommitRecord(transactionId, FirstJournalNumber, JournalFileHeader.BlockBytes, nextPageNumber, rootTree);
            for (var sequence = 0; sequence < 2; sequence++) FileHeaderIo.Write(file, FileHeader.Synced(environmentId, sequence, record));
            file.Sync();
        }
        if (createJournal) CreateFirstJournal(directory, environmentId, io, journalFileSizeBytes, transactionId + 1, faults: null);
        FileIo.SyncDirectory(directory, faults: null);
    }

    private static void CreateFirstJournal(string directory, ulong environmentId, PlatformIo io, long sizeBytes, long firstTransactionId, IFaultInjector? faults)
    {
        var journals = Path.Combine(directory, StorageEnvironmentNames.JournalDirectory);
        if (!Directory.Exists(journals)) FileIo.CreateDirectory(journals, faults);
        using var first = JournalFile.CreateSpare(journals, "spare-0", sizeBytes, io, faults);
        first.WriteHeader(JournalFileHeader.Create(environmentId, FirstJournalNumber, sizeBytes, firstTransactionId, recycled: false), faults);
        first.Rename(journals, JournalFile.FileName(FirstJournalNumber), FirstJournalNumber, faults);
    }

    private static void WritePage(Microsoft.Win32.SafeHandles.SafeFileHandle handle, string path, byte* page, long pageNumber, IFaultInjector? faults)
    {
        ((PageHeader*)page)->Checksum = Crc32C.ComputePage(page, PageLayout.PageSizeBytes);
        FileIo.Write(handle, path, new ReadOnlySpan<byte>(page, PageLayout.PageSizeBytes), pageNumber * PageLayout.PageSizeBytes, faults);
        faults?.AfterWrite(path, pageNumber * PageLayout.PageSizeBytes, new ReadOnlySpan<byte>(page, PageLayout.PageSizeBytes), durable: false);
    }
}
