using System.Runtime.InteropServices;
using Storage.Paging;
using Storage.Trees;

namespace Storage;

public sealed partial class StorageEnvironment
{
    /// <summary>
    /// At open, the cheap part of "allocation never hands out a page in use": the root page of the tree of names
    /// and the root page of every tree must be marked in use in the free-space bitmaps. A bitmap that says one of
    /// them is free (a bit flipped with its checksum intact, or a bug) would let the next allocation overwrite it.
    /// </summary>
    private void VerifyRootsInUse()
    {
        using var tx = BeginRead();
        var pages = tx.Pages;
        CheckInUse(pages, tx.RootState.RootPage, "the root page of the tree of names");
        var cursor = tx.RootTree.CreateCursor();
        for (var ok = cursor.SeekFirst(); ok; ok = cursor.MoveNext())
        {
            var value = cursor.Value;
            if (value.Length != TreeHeader.SizeBytes) continue; // the tree's own open reports it
            var header = MemoryMarshal.Read<TreeHeader>(value);
            CheckInUse(pages, header.RootPage, $"the root page of tree '{System.Text.Encoding.UTF8.GetString(cursor.Key)}'");
        }
    }

    private void CheckInUse(Transactions.PageTransaction pages, long pageNumber, string what)
    {
        if (pageNumber < 2 || pageNumber >= pages.State.NextPageNumber || !Allocation.FreeSpaceMap.IsMarkedFree(pages, pageNumber)) return;
        var bitmap = Allocation.FreeSpaceLayout.BitmapPageFor(pageNumber);
        throw new StorageCorruptedException(
            $"The free-space bitmap marks page {pageNumber}, {what}, as free: the next allocation would overwrite it.",
            DataFile.Path, bitmap, bitmap * Paging.PageLayout.PageSizeBytes + Allocation.FreeSpaceLayout.BitmapOffsetBytes + Allocation.FreeSpaceLayout.BitIndex(pageNumber) / 8);
    }
}
