using Microsoft.Win32.SafeHandles;
using Storage.Faults;
using Storage.Scratch;

namespace Storage.Platform;

/// <summary>
/// Wraps a data file's writer so that its first failure is final: once a write or a sync has failed, every
/// later write and sync of that file fails too, without reaching the disk. After a failed fsync, Linux may have
/// marked the unwritten pages clean and dropped them, and a later fsync then succeeds without writing them; a
/// failed write leaves the file's contents unknown. Either way no later sync may vouch for the file, so a
/// header written after one could claim pages are durable that are not. Only recovery from the journal, in a
/// new instance, can repair the file.
/// </summary>
/// <remarks>
/// A write refused for want of space is the exception: the kernel took the bytes before the refusal into the page
/// cache and none after it, so the file holds old or new page contents, all of which the journal still has, and the
/// flush that met it writes them all again later (<see cref="Storage.Flush.Flusher"/>). A sync that fails for want of
/// space is final like any other.
/// </remarks>
internal sealed class FailStopDataFileWriter : IDataFileWriter
{
    private readonly IDataFileWriter _inner;
    private volatile StorageException? _failure;

    public FailStopDataFileWriter(IDataFileWriter inner) => _inner = inner;

    public int Write(SafeFileHandle handle, string path, IReadOnlyList<(long PageNumber, ScratchBuffer Buffer)> pages, IFaultInjector? faults)
    {
        ThrowIfFailed(path);
        try
        {
            return _inner.Write(handle, path, pages, faults);
        }
        catch (StorageException e) when (e is not StorageFullException)
        {
            Record(e);
            throw;
        }
    }

    public void Sync(SafeFileHandle handle, string path, IFaultInjector? faults)
    {
        ThrowIfFailed(path);
        try
        {
            _inner.Sync(handle, path, faults);
        }
        catch (StorageException e)
        {
            Record(e);
            throw;
        }
    }

    private void Record(StorageException e) => Interlocked.CompareExchange(ref _failure, e, null);

    private void ThrowIfFailed(string path)
    {
        var failure = _failure;
        if (failure is null) return;
        throw new StorageException(StorageErrorCode.IoFailure,
            $"An earlier write or sync of '{path}' failed ({failure.Message}); no later sync can make its pages durable, so the file takes no more writes. Reopen the environment to recover from the journal.",
            path, failure.OsError, failure);
    }

    public void Dispose() => _inner.Dispose();
}
