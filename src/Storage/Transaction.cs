using System.Text;
using Storage.Transactions;
using Storage.Trees;

namespace Storage;

/// <summary>
/// A snapshot of the environment: a <see cref="ReadTransaction"/> or the single <see cref="WriteTransaction"/>.
/// Not tied to a thread (it may cross an <c>await</c>), but not for use by two threads at once.
/// Dispose it to release the snapshot.
/// </summary>
public abstract class Transaction : IDisposable
{
    private const int MaxTreeNameBytes = 255;

    private protected readonly Dictionary<string, Tree> _trees = new(StringComparer.Ordinal);
    private protected TransactionStatus _status = TransactionStatus.Active;

    private protected Transaction(StorageEnvironment environment, PageTransaction pages)
    {
        Environment = environment;
        Pages = pages;
        RootState = TreeState.FromHeader(pages.State.RootTree);
        RootTree = new BTree(pages, RootState);
    }

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
        if (_trees.TryGetValue(name, out tree!)) return true;
        Span<byte> key = stackalloc byte[MaxTreeNameBytes];
        var length = EncodeName(name, key);
        if (!RootTree.TryGet(key[..length], out var value))
        {
            tree = null!;
            return false;
        }
        tree = new Tree(this, name, TreeState.FromHeader(ReadHeader(value)));
        _trees[name] = tree;
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
        var count = Encoding.UTF8.GetByteCount(name);
        if (count is 0 or > MaxTreeNameBytes)
            throw new ArgumentException($"A tree name must be 1 to {MaxTreeNameBytes} bytes of UTF-8; '{name}' is {count}.", nameof(name));
        return Encoding.UTF8.GetBytes(name, destination);
    }

    internal void EnsureUsable()
    {
        if (_status == TransactionStatus.Active) return;
        ThrowNotUsable();
    }

    private void ThrowNotUsable() =>
        throw new StorageException(StorageErrorCode.TransactionNotUsable, _status switch
        {
            TransactionStatus.Committed => "The transaction was committed.",
            TransactionStatus.Failed => "The transaction failed earlier and was rolled back; start a new one.",
            TransactionStatus.Aborted => "The environment was disposed.",
            _ => "The transaction was disposed.",
        });

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

    private protected enum TransactionStatus
    {
        Active,
        Committed,
        Failed,
        Aborted,
        Disposed,
    }
}
