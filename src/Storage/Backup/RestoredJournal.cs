using Storage.Journal;
using Storage.Paging;
using Storage.Platform;
using Storage.Recovery;
using Storage.State;

namespace Storage.Backup;

/// <summary>
/// The first journal file of a restored environment, holding the entries of a chain's incremental backups after the
/// full one: written entry by entry at 4 KiB boundaries after the header block, as the journal writes them; the header
/// goes last, naming the file's final size and the first transaction, so that the environment's recovery replays them.
/// </summary>
internal sealed unsafe class RestoredJournal : IDisposable
{
    private readonly string _path;
    private readonly Microsoft.Win32.SafeHandles.SafeFileHandle _handle;
    private readonly ulong _environmentId;
    private readonly long _firstTransactionId;
    private long _position = JournalFileHeader.BlockBytes;

    public RestoredJournal(string environmentDirectory, ulong environmentId, long firstTransactionId)
    {
        var directory = Path.Combine(environmentDirectory, StorageEnvironmentNames.JournalDirectory);
        FileIo.CreateDirectory(directory, faults: null);
        _path = Path.Combine(directory, JournalFile.FileName(EnvironmentCreator.FirstJournalNumber));
        _handle = FileIo.OpenReadWrite(_path, create: true);
        _environmentId = environmentId;
        _firstTransactionId = firstTransactionId;
    }

    /// <summary>Appends one entry, as the journal stored it (header and payload).</summary>
    public void Append(long transactionId, ReadOnlyMemory<byte> stored)
    {
        FileIo.Write(_handle, _path, stored.Span, _position, faults: null);
        _position += AlignedBuffer.AlignUp(stored.Length);
    }

    /// <summary>Sizes the file (zeros after the last entry end the replay), writes its header and syncs it.</summary>
    public void Finish()
    {
        var size = Math.Max(AlignedBuffer.AlignUp(_position + JournalBlock.Bytes), 1L << 20);
        size = (size + (1L << 20) - 1) & ~((1L << 20) - 1);
        FileIo.SetLength(_handle, _path, size);
        using var block = new AlignedBuffer(JournalFileHeader.BlockBytes);
        new Span<byte>(block.Pointer, JournalFileHeader.BlockBytes).Clear();
        JournalFileHeader.Create(_environmentId, EnvironmentCreator.FirstJournalNumber, size, _firstTransactionId, recycled: false).WriteBlock(block.Pointer);
        FileIo.Write(_handle, _path, new ReadOnlySpan<byte>(block.Pointer, JournalFileHeader.BlockBytes), 0, faults: null);
        FileIo.SyncData(_handle, _path, faults: null);
    }

    public void Dispose() => _handle.Dispose();
}
