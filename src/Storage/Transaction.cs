using System.Diagnostics;
using System.Text;
using Storage.Transactions;
using Storage.Trees;

namespace Storage;

/// <summary>
/// A snapshot of the environment: a <see cref="ReadTransaction"/> or the single <see cref="WriteTransaction"/>.
/// Not tied to a thread (it may cross an <c>await</c>), but not for use by two threads at once.
/// Dispose it to release the snapshot.
/// </summary>
/// <remarks>
/// A transaction that is collected without being disposed is found by its finalizer, which releases what it held
/// (its snapshot, maps, and for a write transaction its uncommitted changes and the write lock) and reports it
/// (<see cref="StorageOptions.OnTransactionLeaked"/>). Spans read from it must not outlive the last use of the
/// transaction object itself.
/// </remarks>
public abstract class Transaction : IDisposable
{
    private const int MaxTreeNameBytes = 255;

    private protected OpenTrees _trees;
    private protected TransactionStatus _status = TransactionStatus.Active;

    /// <summary>Set once construction finished: a transaction whose constructor threw was never handed out, and its finalizer releases nothing.</summary>
    private readonly bool _begun;

    private protected Transaction(StorageEnvironment environment, PageTransaction pages, long beganTimestamp, StackTrace? beganAt)
    {
        Environment = environment;
        Pages = pages;
        BeganTimestamp = beganTimestamp;
        BeganAt = beganAt;
        RootState = TreeState.FromHeader(pages.State.RootTree);
        RootTree = new BTree(pages, RootState);
        _begun = true;
    }

    /// <summary>When it began (<see cref="Stopwatch"/> ticks).</summary>
    internal long BeganTimestamp { get; }

    /// <summary>Where it was begun, when <see cref="StorageOptions.TrackTransactionStacks"/> is on.</summary>
    internal StackTrace? BeganAt { get; }

    /// <summary>The environment this transaction reads.</summary>
    public StorageEnvironment Environment { get; }

    /// <summary>The id of the snapshot (read) or of the transaction being built (write).</summary>
    public abstract long TransactionId { get; }

    /// <summary>Whether changes can be made.</summary>
    public bool IsWritable => Pages.IsWritable;

    internal PageTransaction Pages { get; }

    internal TreeState RootState { get; }

    internal BTree RootTree { get; }

    /// <summary>Opens a tree; throws <see cref="StorageException"/> with <see cref="StorageErrorCode.TreeNotFound"/> when there is none of that name.</summary>
    public Tree OpenTree(string name) =>
        TryOpenTree(name, out var tree) ? tree : throw new StorageException(StorageErrorCode.TreeNotFound, $"There is no tree named '{name}'.");

    /// <summary>Opens a tree when it exists.</summary>
    public bool TryOpenTree(string name, out Tree tree)
    {
        EnsureUsable();
        if (_trees.TryGet(name, out tree)) return true;
        Span<byte> key = stackalloc byte[MaxTreeNameBytes];
        var length = EncodeName(name, key);
        if (!RootTree.TryGet(key[..length], out var value))
        {
            tree = null!;
            return false;
        }
        tree = new Tree(this, name, TreeState.FromHeader(ReadHeader(value)));
        _trees.Set(tree);
        return true;
    }

    /// <summary>The names of all trees, in ordinal order of their UTF-8 bytes.</summary>
    public IReadOnlyList<string> ListTrees()
    {
        EnsureUsable();
        var names = new List<string>();
        var cursor = RootTree.CreateCursor();
        for (var ok = cursor.SeekFirst(); ok; ok = cursor.MoveNext()) names.Add(Encoding.UTF8.GetString(cursor.Key));
        return names;
    }

    private static TreeHeader ReadHeader(ReadOnlySpan<byte> value)
    {
        if (value.Length != TreeHeader.SizeBytes) throw new StorageCorruptedException($"A tree header is {value.Length} bytes, expected {TreeHeader.SizeBytes}.");
        return System.Runtime.InteropServices.MemoryMarshal.Read<TreeHeader>(value);
    }

    private protected static int EncodeName(string name, Span<byte> destination)
    {
        ArgumentNullException.ThrowIfNull(name);
        int count;
        try
        {
            count = StrictUtf8.GetByteCount(name);
        }
        catch (EncoderFallbackException)
        {
            // Replaced by U+FFFD, two different names (a lone surrogate each) would be one tree on disk and two open here.
            throw new ArgumentException("A tree name must be valid UTF-16: it has a lone surrogate.", nameof(name));
        }
        if (count is 0 or > MaxTreeNameBytes)
            throw new ArgumentException($"A tree name must be 1 to {MaxTreeNameBytes} bytes of UTF-8; '{name}' is {count}.", nameof(name));
        return StrictUtf8.GetBytes(name, destination);
    }

    private static readonly UTF8Encoding StrictUtf8 = new(encoderShouldEmitUTF8Identifier: false, throwOnInvalidBytes: true);

    /// <summary>Every call into a transaction, its trees, cursors and ranges passes here first.</summary>
    internal void EnsureUsable()
    {
        if (_status == TransactionStatus.Active && !Pages.EndRequested) return;
        ThrowNotUsable();
    }

    private void ThrowNotUsable()
    {
        if (_status == TransactionStatus.Active)
        {
            // Asked to end by the reader limit policy. This is the reader's own thread and its own call: nothing it read
            // before is in use any more (spans it kept from earlier calls must not be used after this one), so its
            // snapshot can go now.
            _status = TransactionStatus.Ended;
            Pages.Release();
        }
        if (_status == TransactionStatus.Ended)
        {
            throw new StorageException(StorageErrorCode.SnapshotTooOld,
                $"The read transaction on snapshot {TransactionId} was ended because it passed the reader limit (StorageOptions.ReaderLimitPolicy); begin a new one.");
        }
        throw new StorageException(StorageErrorCode.TransactionNotUsable, _status switch
        {
            TransactionStatus.Committed => "The transaction was committed.",
            TransactionStatus.Failed => "The transaction failed earlier and was rolled back; start a new one.",
            TransactionStatus.Aborted => "The environment was disposed.",
            _ => "The transaction was disposed.",
        });
    }

    /// <summary>Marks a write transaction that threw part-way: it can only be disposed.</summary>
    internal void Fail()
    {
        if (IsWritable && _status == TransactionStatus.Active) _status = TransactionStatus.Failed;
    }

    internal void Abort()
    {
        if (_status == TransactionStatus.Active) _status = TransactionStatus.Aborted;
    }

    /// <summary>Ends the transaction; a write transaction that was not committed is rolled back.</summary>
    public void Dispose()
    {
        if (_status == TransactionStatus.Disposed) return;
        _status = TransactionStatus.Disposed;
        End();
        GC.SuppressFinalize(this);
    }

    private protected abstract void End();

    /// <summary>
    /// Collected without <see cref="Dispose"/>: nothing can use it any more, so what it holds is released here (a write
    /// transaction's lock too, or no other could ever begin) and the leak is reported. Never throws.
    /// </summary>
    ~Transaction()
    {
        if (!_begun || _status == TransactionStatus.Disposed) return;
        try
        {
            _status = TransactionStatus.Disposed;
            End();
            Environment.ReportLeak(this);
        }
        catch (Exception)
        {
            // An exception escaping a finalizer ends the process.
        }
    }

    private protected enum TransactionStatus
    {
        Active,
        Committed,
        Failed,
        Aborted,

        /// <summary>Ended by the reader limit policy; its snapshot is released.</summary>
        Ended,
        Disposed,
    }
}
