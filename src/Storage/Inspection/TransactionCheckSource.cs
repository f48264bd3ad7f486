using Microsoft.Win32.SafeHandles;
using Storage.Paging;
using Storage.State;
using Storage.Trees;

namespace Storage.Inspection;

/// <summary>
/// The newest committed snapshot of an environment this process has open, as the checker's source. A read transaction
/// pins the snapshot: the flusher writes nothing newer than it into the data file, and no version it sees leaves scratch
/// memory, while the check runs. A page is the transaction's version, as <see cref="Transactions.PageTransaction"/> finds
/// it: the newest in the page table at or before the snapshot's transaction, else the mapped data file (which then holds
/// that version: the flusher writes a page before it drops the version from the page table). Pages are copied unchecked:
/// the checker verifies them, and reports what the engine's own first read would refuse.
/// </summary>
internal sealed unsafe class TransactionCheckSource : ICheckSource, IDisposable
{
    private const int PageSize = PageLayout.PageSizeBytes;

    private readonly ReadTransaction _transaction;
    private readonly EnvironmentState _state;
    private readonly PageTable _pageTable;
    private readonly DataFile _dataFile;

    /// <summary>Every mapping acquired, released at the end: a page pointer into one stays valid while it is held.</summary>
    private readonly List<DataFileMapping> _mappings = [];
    private DataFileMapping _mapping;
    private readonly SafeFileHandle? _holeProbe;

    public TransactionCheckSource(StorageEnvironment environment, ReadTransaction transaction)
    {
        _transaction = transaction;
        _state = transaction.Pages.State;
        _pageTable = environment.PageTable;
        _dataFile = environment.DataFile;
        _mapping = _dataFile.AcquireMapping();
        _mappings.Add(_mapping);
        FilePageCount = _mapping.PageCount;
        _holeProbe = OpenHoleProbe(_dataFile.Path);
    }

    public string DataPath => _dataFile.Path;

    public long TransactionId => _state.TransactionId;

    public long NextPageNumber => _state.NextPageNumber;

    public TreeHeader RootTree => _state.RootTree;

    public long FilePageCount { get; }

    /// <summary>A commit grows the file before it publishes its state, so no page of the snapshot lies past the file.</summary>
    public long PagesEndOutsideFile => 0;

    /// <summary>Problems of reading the state: none, the state is the one the engine publishes.</summary>
    public IReadOnlyList<CheckProblem> Problems => [];

    public SafeFileHandle? HoleProbe => _holeProbe;

    public bool TryReadPage(long pageNumber, Span<byte> destination, out string? problem)
    {
        if (!IsInState(pageNumber, out problem)) return false;
        if (TryGetVersion(pageNumber, out var version, out _))
        {
            new ReadOnlySpan<byte>(version, PageSize).CopyTo(destination);
            return true;
        }
        return TryReadMapped(pageNumber, destination, out problem);
    }

    /// <remarks>The page table holds a run's version whole, under its first page: a page inside the run is read from there.</remarks>
    public bool TryReadRunPage(long firstPage, long index, Span<byte> destination, out string? problem)
    {
        if (!IsInState(firstPage + index, out problem)) return false;
        if (TryGetVersion(firstPage, out var version, out var versionPages))
        {
            if (index >= versionPages)
            {
                problem = $"the version of the run at page {firstPage} in memory holds {versionPages} pages, not {index + 1}";
                return false;
            }
            new ReadOnlySpan<byte>(version + index * PageSize, PageSize).CopyTo(destination);
            return true;
        }
        return TryReadMapped(firstPage + index, destination, out problem);
    }

    public bool IsHeldOutsideDataFile(long pageNumber, long runFirstPage) => TryGetVersion(runFirstPage, out _, out _);

    /// <summary>Whether the page lies below the snapshot's next page number. Also where the reader limit policy may end the check.</summary>
    private bool IsInState(long pageNumber, out string? problem)
    {
        // A check is a long read: when the reader limit policy asks it to end, it ends here (SnapshotTooOld).
        _transaction.EnsureUsable();
        if (pageNumber < 0 || pageNumber >= _state.NextPageNumber)
        {
            problem = $"page {pageNumber} is outside the pages in use (below {_state.NextPageNumber})";
            return false;
        }
        problem = null;
        return true;
    }

    /// <summary>The version of the page (or of the run that starts there) the snapshot sees, when it is in memory (not yet in the data file).</summary>
    public bool TryGetVersionInMemory(long pageNumber, out byte* version, out int pageCount) => TryGetVersion(pageNumber, out version, out pageCount);

    /// <summary>The data file's bytes of the page, as the snapshot sees them (the caller knows no newer version is in memory).</summary>
    public bool TryReadFromDataFile(long pageNumber, Span<byte> destination, out string? problem) =>
        IsInState(pageNumber, out problem) && TryReadMapped(pageNumber, destination, out problem);

    private bool TryGetVersion(long pageNumber, out byte* version, out int pageCount)
    {
        if (!_pageTable.IsEmpty && _pageTable.TryGetPage(pageNumber, _state.TransactionId, out version, out pageCount)) return true;
        version = null;
        pageCount = 0;
        return false;
    }

    private bool TryReadMapped(long pageNumber, Span<byte> destination, out string? problem)
    {
        if (pageNumber >= _mapping.PageCount)
        {
            // The file grew since the check began; the current map covers it.
            var current = _dataFile.AcquireMapping();
            if (ReferenceEquals(current, _mapping)) current.Release();
            else _mappings.Add(_mapping = current);
            if (pageNumber >= _mapping.PageCount)
            {
                problem = $"page {pageNumber} is past the end of the data file ({_mapping.PageCount} pages)";
                return false;
            }
        }
        new ReadOnlySpan<byte>(_mapping.PagePointer(pageNumber), PageSize).CopyTo(destination);
        problem = null;
        return true;
    }

    /// <summary>A handle of its own for SEEK_HOLE: seeking moves the file offset, which the environment's handle keeps for no one else.</summary>
    private static SafeFileHandle? OpenHoleProbe(string path)
    {
        if (!Platform.Posix.IsSupported) return null;
        try
        {
            return File.OpenHandle(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return null; // no hole check, rather than no check
        }
    }

    public void Dispose()
    {
        foreach (var mapping in _mappings) mapping.Release();
        _mappings.Clear();
        _holeProbe?.Dispose();
    }
}
