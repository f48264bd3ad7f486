using Storage.Paging;
using Storage.Transactions;

namespace Storage.Commit;

/// <summary>
/// The diffs of a commit's changed pages (those diffed against their previous versions), taken in chunks by the committing
/// thread and, for a large transaction, by a thread-pool thread beside it, each into a builder of its own; the commit then
/// appends the helper's records to its entry (the order of records in an entry does not matter: each page is in it once).
/// Chunks keep the two balanced, and a helper that starts late finds less (or nothing) left to do. Below
/// <see cref="DefaultMinPages"/> changed pages the committing thread diffs them all: waking another thread costs more.
/// </summary>
internal sealed unsafe class DiffHelper : IThreadPoolWorkItem, IDisposable
{
    /// <summary>Changed pages a commit needs before a thread-pool thread helps diff them.</summary>
    public const int DefaultMinPages = 192;

    private const int ChunkPages = 16;

    private readonly int _compressionThresholdBytes;
    private readonly ManualResetEventSlim _done = new(true);
    private readonly List<(long PageNumber, DirtyPage Page)> _overflows = [];
    private (long PageNumber, DirtyPage Page)[] _pages = new (long, DirtyPage)[256];
    private int _count;
    private int _next;
    private long _transactionId;
    private JournalEntryBuilder? _part;
    private Exception? _failure;

    /// <summary><see cref="Queued"/> from <see cref="StartHelper"/> until the helper claims the work (<see cref="Running"/>)
    /// or the committing thread, done first, takes it back (<see cref="Idle"/>): a helper that has not started by then never
    /// touches the pages (a thread pool with no thread free cannot hold a commit up).</summary>
    private int _state;

    private const int Idle = 0, Queued = 1, Running = 2;
    private int _leaves, _branches, _others;

    /// <summary>The helper's builder is made on first use: most environments never commit a transaction this large.</summary>
    public DiffHelper(int compressionThresholdBytes) => _compressionThresholdBytes = compressionThresholdBytes;

    /// <summary><see cref="DefaultMinPages"/>; tests change it to compare commits with and without the helper.</summary>
    internal int MinPages { get; set; } = DefaultMinPages;

    /// <summary>Test seam: the committing thread leaves every changed page to the helper.</summary>
    internal bool HelperTakesAll { get; set; }

    /// <summary>Commits the helper was started for.</summary>
    internal long Runs { get; private set; }

    /// <summary>Pages the helper diffed (the rest the committing thread did).</summary>
    internal long HelperPages { get; private set; }

    public int Leaves => _leaves;

    public int Branches => _branches;

    public int Others => _others;

    /// <summary>Pages <see cref="Add"/> takes: changed, one page long (a one-page overflow value among them is handed back, see <see cref="Overflows"/>).</summary>
    public static bool IsChanged(in DirtyPage page) => !page.IsFreed && !page.IsNew && page.Buffer.PageCount == 1;

    /// <summary>One-page overflow values met while diffing: the commit adds them whole.</summary>
    public IReadOnlyList<(long PageNumber, DirtyPage Page)> Overflows => _overflows;

    public void Begin(long transactionId)
    {
        // The previous commit waited for its helper, if it started: whatever it did is done.
        Volatile.Write(ref _state, Idle);
        _count = 0;
        _next = 0;
        _transactionId = transactionId;
        _failure = null;
        _overflows.Clear();
        _leaves = _branches = _others = 0;
    }

    public void Add(long pageNumber, in DirtyPage page)
    {
        if (_count == _pages.Length) Array.Resize(ref _pages, _pages.Length * 2);
        _pages[_count++] = (pageNumber, page);
    }

    /// <summary>Wakes the helper when there are enough pages; the caller must not change them until <see cref="Wait"/> returned.</summary>
    public void StartHelper()
    {
        if (_count < MinPages) return;
        (_part ??= new JournalEntryBuilder(_compressionThresholdBytes)).Begin();
        _done.Reset();
        Volatile.Write(ref _state, Queued);
        Runs++;
        ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);
    }

    /// <summary>The committing thread's share: chunks until none is left, then the helper's records after its own.</summary>
    public void Diff(JournalEntryBuilder entry)
    {
        if (HelperTakesAll && Volatile.Read(ref _state) != Idle) _done.Wait();
        else Run(entry);
        if (!Wait()) return;
        if (_failure is { } failure) System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw(failure);
        HelperPages += _part!.RecordCount;
        entry.AddRecordsOf(_part);
        _part.Trim();
    }

    /// <summary>
    /// Waits for the helper if it started (always, before the transaction's pages can go: it reads and stamps them);
    /// false when it had not, and now will not.
    /// </summary>
    public bool Wait()
    {
        var state = Interlocked.CompareExchange(ref _state, Idle, Queued);
        if (state != Running) return false;
        _done.Wait();
        return true;
    }

    void IThreadPoolWorkItem.Execute()
    {
        // A work item queued for an earlier commit and taken back may run now: it claims only work still queued.
        if (Interlocked.CompareExchange(ref _state, Running, Queued) != Queued) return;
        try
        {
            Run(_part!);
        }
        catch (Exception e)
        {
            _failure = e;
        }
        finally
        {
            _done.Set();
        }
    }

    private void Run(JournalEntryBuilder builder)
    {
        int leaves = 0, branches = 0, others = 0;
        while (true)
        {
            var start = Interlocked.Add(ref _next, ChunkPages) - ChunkPages;
            if (start >= _count) break;
            var end = Math.Min(start + ChunkPages, _count);
            for (var i = start; i < end; i++)
            {
                ref var item = ref _pages[i];
                var page = item.Page.Buffer.Pointer;
                var flags = ((PageHeader*)page)->Flags;
                if ((flags & PageFlags.Overflow) != 0)
                {
                    lock (_overflows) _overflows.Add(item);
                    continue;
                }
                // A changed page is stamped with a checksum worked out from its original's and the bytes that changed.
                builder.AddStampedPage(item.PageNumber, page, item.Page.Original, _transactionId, item.Page.Lines);
                CountKind(flags, ref leaves, ref branches, ref others);
            }
        }
        Interlocked.Add(ref _leaves, leaves);
        Interlocked.Add(ref _branches, branches);
        Interlocked.Add(ref _others, others);
    }

    /// <summary>Counts a one-page tree page a commit adds to its entry by kind, for <see cref="CommitStats"/>.</summary>
    public static void CountKind(PageFlags flags, ref int leaves, ref int branches, ref int others)
    {
        if ((flags & PageFlags.Leaf) != 0) leaves++;
        else if ((flags & PageFlags.Branch) != 0) branches++;
        else others++;
    }

    public void Dispose()
    {
        Wait();
        _part?.Dispose();
        _done.Dispose();
    }
}
