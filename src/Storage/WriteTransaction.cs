using System.Runtime.InteropServices;
using Storage.Transactions;
using Storage.Trees;

namespace Storage;

/// <summary>
/// The environment's single write transaction. Changes are private until <see cref="Commit()"/>, which
/// returns once they are durable; disposing without committing rolls them back. A transaction whose
/// operation threw cannot be used again (only disposed).
/// </summary>
public sealed class WriteTransaction : Transaction
{
    internal WriteTransaction(StorageEnvironment environment, PageTransaction pages, long beganTimestamp, System.Diagnostics.StackTrace? beganAt)
        : base(environment, pages, beganTimestamp, beganAt)
    {
        pages.Owner = this;
    }

    /// <summary>Whether the page is the root of the tree of names or of a tree this transaction opened.</summary>
    internal bool IsOpenTreeRoot(long pageNumber)
    {
        if (RootState.RootPage == pageNumber) return true;
        foreach (var tree in _trees.Values)
        {
            if (tree.State.RootPage == pageNumber) return true;
        }
        return false;
    }

    /// <inheritdoc />
    public override long TransactionId => Pages.State.TransactionId + 1;

    /// <summary>Creates an empty tree; throws <see cref="StorageException"/> with <see cref="StorageErrorCode.TreeExists"/> if the name is taken.</summary>
    public Tree CreateTree(string name)
    {
        EnsureUsable();
        Span<byte> key = stackalloc byte[256];
        var length = EncodeName(name, key);
        if (TryOpenTree(name, out _)) throw new StorageException(StorageErrorCode.TreeExists, $"A tree named '{name}' exists already.");
        if (RootState.LastTreeId >= int.MaxValue - 1)
        {
            throw new StorageException(StorageErrorCode.Corrupted, $"Tree ids are exhausted (the last one handed out is {RootState.LastTreeId}).");
        }
        try
        {
            RootState.LastTreeId++;
            var state = BTree.Create(Pages, checked((int)RootState.LastTreeId));
            state.IsDirty = true;
            var tree = new Tree(this, name, state);
            _trees[name] = tree;
            PersistHeader(key[..length], state);
            return tree;
        }
        catch
        {
            Fail();
            throw;
        }
    }

    /// <summary>Opens the tree, creating it when missing.</summary>
    public Tree OpenOrCreateTree(string name) => TryOpenTree(name, out var tree) ? tree : CreateTree(name);

    /// <summary>Deletes a tree and frees all its pages. Returns false when there was none of that name.</summary>
    public bool DeleteTree(string name)
    {
        if (!TryOpenTree(name, out var tree)) return false;
        Span<byte> key = stackalloc byte[256];
        var length = EncodeName(name, key);
        try
        {
            tree.Btree.FreeAllPages();
            RootTree.Delete(key[..length]);
            tree.MarkDeleted();
            _trees.Remove(name);
            return true;
        }
        catch
        {
            Fail();
            throw;
        }
    }

    /// <summary>Makes the changes durable (one journal write) and visible to transactions that begin afterwards.</summary>
    public CommitStats Commit() => Commit(CommitDurability.Durable);

    /// <summary>
    /// Makes the changes visible to transactions that begin afterwards, and durable before it returns
    /// (<see cref="CommitDurability.Durable"/>) or soon after (<see cref="CommitDurability.Lazy"/>).
    /// </summary>
    public CommitStats Commit(CommitDurability durability)
    {
        if (durability is not (CommitDurability.Durable or CommitDurability.Lazy)) throw new ArgumentOutOfRangeException(nameof(durability), durability, null);
        EnsureUsable();
        try
        {
            Span<byte> key = stackalloc byte[256];
            foreach (var (name, tree) in _trees)
            {
                if (!tree.State.IsDirty) continue;
                PersistHeader(key[..EncodeName(name, key)], tree.State);
            }
            var stats = Environment.Commit(this, durability);
            _status = TransactionStatus.Committed;
            return stats;
        }
        catch
        {
            Fail();
            throw;
        }
    }

    private void PersistHeader(ReadOnlySpan<byte> name, TreeState state)
    {
        var header = state.ToHeader();
        RootTree.Put(name, MemoryMarshal.AsBytes(new ReadOnlySpan<TreeHeader>(in header)));
        state.IsDirty = false;
    }

    private protected override void End()
    {
        if (_status != TransactionStatus.Committed)
        {
            Pages.DiscardDirty();
            Environment.FreeSpace.Rollback();
        }
        Pages.Release();
        Environment.ReleaseTransaction(this);
    }
}
