using System.Security.Cryptography;
using Storage.Allocation;
using Storage.Paging;
using Storage.Platform;
using Storage.Trees;

namespace Storage.Environments;

/// <summary>
/// Writes a new, empty environment: both headers, region 0's free-space bitmaps and the root tree's
/// leaf, into a temporary file that is synced and renamed into place, so a crash leaves either no
/// environment or a whole one.
/// </summary>
internal static unsafe class EnvironmentCreator
{
    public static void Create(string directory, PlatformIo io, IFaultInjector? faults)
    {
        var finalPath = Path.Combine(directory, DataFile.FileName);
        var temporaryPath = finalPath + ".new";
        if (File.Exists(temporaryPath)) File.Delete(temporaryPath);

        using var store = new BootstrapPageStore(FreeSpaceLayout.FirstUsablePage(0));
        var root = BTree.Create(store, treeId: 0);
        var nextPage = store.NextPageNumber;
        Span<byte> id = stackalloc byte[8];
        RandomNumberGenerator.Fill(id);
        var environmentId = BitConverter.ToUInt64(id) | 1;

        using (var handle = FileIo.OpenReadWrite(temporaryPath, create: true))
        {
            var fileBytes = AlignedBuffer.AlignUp(Math.Max(nextPage * PageLayout.PageSizeBytes, 1L << 20));
            FileIo.SetLength(handle, temporaryPath, fileBytes);
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
                // Journal file 1 at offset 0 is where the first transaction's entry will go.
                var created = new CommitRecord(TransactionId: 0, JournalFileNumber: 1, JournalEndOffsetBytes: 0, nextPage, rootHeader);
                FileHeaderIo.Write(file, FileHeader.Synced(environmentId, sequence, created));
            }
            file.Sync();
        }
        File.Move(temporaryPath, finalPath);
        FileIo.SyncDirectory(directory, faults);
    }

    private static void WritePage(Microsoft.Win32.SafeHandles.SafeFileHandle handle, string path, byte* page, long pageNumber, IFaultInjector? faults)
    {
        ((PageHeader*)page)->Checksum = Crc32C.ComputePage(page, PageLayout.PageSizeBytes);
        FileIo.Write(handle, path, new ReadOnlySpan<byte>(page, PageLayout.PageSizeBytes), pageNumber * PageLayout.PageSizeBytes, faults);
    }
}
