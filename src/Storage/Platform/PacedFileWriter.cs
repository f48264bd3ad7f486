using Microsoft.Win32.SafeHandles;

namespace Storage.Platform;

/// <summary>
/// A new file written front to back whose bytes are handed to the device a step at a time as it grows, at most two
/// steps in flight: each full step is started, and the one before it waited for.
/// </summary>
/// <remarks>
/// Written whole and then synced, a file of hundreds of MiB reaches the device in one burst at its sync, and every
/// durable write of the journal queued behind that burst waits for all of it: a writer committing beside a backup
/// stopped for the length of the backup's sync. In steps, a journal write waits for a step at most, the device writes
/// while the file is still being produced, and the sync at the end has little left. Where the write-back call is missing
/// (not Linux), the file is written as usual and the sync does the work.
/// </remarks>
internal sealed class PacedFileWriter : IDisposable
{
    /// <summary>Bytes handed to the device at once: under a ms of a disk's writes (larger steps measured no faster, and kept commits waiting longer).</summary>
    public const long DefaultStepBytes = 1L << 20;

    private readonly SafeFileHandle _handle;
    private readonly string _path;
    private readonly long _stepBytes;
    private long _position;
    private long _startedTo;
    private bool _paced = true;

    /// <summary>Creates <paramref name="path"/>, which must not exist.</summary>
    public PacedFileWriter(string path, long stepBytes = DefaultStepBytes)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(stepBytes);
        _path = path;
        _stepBytes = stepBytes;
        _handle = File.OpenHandle(path, FileMode.CreateNew, FileAccess.Write, FileShare.None);
    }

    /// <summary>Bytes written so far.</summary>
    public long Length => _position;

    /// <summary>Appends <paramref name="buffer"/>, then starts the write-back of each step it completed and waits for the step before.</summary>
    public void Write(ReadOnlySpan<byte> buffer)
    {
        RandomAccess.Write(_handle, buffer, _position);
        _position += buffer.Length;
        while (_paced && _position - _startedTo >= _stepBytes)
        {
            var step = _startedTo;
            _paced = FileIo.WriteBack(_handle, _path, step, _stepBytes, wait: false)
                && (step == 0 || FileIo.WriteBack(_handle, _path, step - _stepBytes, _stepBytes, wait: true));
            _startedTo = step + _stepBytes;
        }
    }

    /// <summary>Makes the whole file durable.</summary>
    public void Sync() => FileIo.SyncData(_handle, _path, faults: null);

    public void Dispose() => _handle.Dispose();
}
