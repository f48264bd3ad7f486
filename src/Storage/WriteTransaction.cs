using System.Runtime.InteropServices;
using Storage.Commit;
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
        foreach (var tree in _trees)
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
            // The new root goes near the tree of names' root, which this commit changes too (the name goes in).
            var state = BTree.Create(Pages, checked((int)RootState.LastTreeId), RootState.RootPage);
            state.IsDirty = true;
            var tree = new Tree(this, name, state);
            _trees.Set(tree);
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

    /// <summary>
    /// Where compaction should bring the end of the file: the pages in use, plus a little room, and how many pages in use
    /// lie at or past that (to move below it).
    /// </summary>
    internal (long Ceiling, long PagesToMove) PlanCompaction()
    {
        EnsureUsable();
        var next = Pages.NextPageNumber;
        var used = next - Environment.FreeSpace.TotalFreePages;
        var ceiling = used + Math.Max(used / 64, 16);
        if (ceiling >= next) return (ceiling, 0);
        return (ceiling, next - ceiling - Allocation.FreeSpaceMap.CountFree(Pages, ceiling, next));
    }

    /// <summary>Moves pages of every tree (the tree of names last) from <paramref name="ceiling"/> and past it to free pages below it, at most <paramref name="budget"/>.</summary>
    internal int RelocateAbove(long ceiling, int budget)
    {
        EnsureUsable();
        try
        {
            var moved = 0;
            foreach (var name in ListTrees())
            {
                if (moved >= budget) break;
                moved += OpenTree(name).Btree.RelocateAbove(ceiling, budget - moved);
            }
            if (moved < budget) moved += RootTree.RelocateAbove(ceiling, budget - moved);
            return moved;
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
    /// <remarks>
    /// Group commit: the write lock is released as soon as the journal entry is built, so the next write transaction
    /// builds on this one while the disk works, and entries of commits that wait together go out in one durable write.
    /// Readers see a durable commit once its write returns. If that write fails, the commits in it fail with its error
    /// (<see cref="StorageErrorCode.IoFailure"/>, say) and every later one still waiting with
    /// <see cref="StorageErrorCode.EnvironmentPoisoned"/>; none of them was acknowledged or seen by a reader.
    /// </remarks>
    public CommitStats Commit(CommitDurability durability)
    {
        var pending = Append(durability);
        return Environment.Commits.Complete(pending);
    }

    /// <summary>
    /// As <see cref="Commit(CommitDurability)"/>, but the returned task completes when the commit is durable (or, for
    /// <see cref="CommitDurability.Lazy"/>, visible) and no thread is blocked while the journal write runs.
    /// </summary>
    /// <remarks>
    /// The transaction's journal entry is built and handed to the journal before this method returns, and the write
    /// lock is released then, so the next write transaction can begin. <paramref name="cancellationToken"/> is
    /// observed until then: cancelled before, the transaction is rolled back and disposed, and the task is
    /// cancelled. Once the entry is handed over the commit can no longer be cancelled: the task completes when the
    /// write does, whatever the token says.
    /// </remarks>
    public ValueTask<CommitStats> CommitAsync(CancellationToken cancellationToken = default) => CommitAsync(CommitDurability.Durable, cancellationToken);

    /// <inheritdoc cref="CommitAsync(CancellationToken)"/>
    public ValueTask<CommitStats> CommitAsync(CommitDurability durability, CancellationToken cancellationToken = default)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            EnsureUsable();
            Fail();
            Dispose();
            return ValueTask.FromCanceled<CommitStats>(cancellationToken);
        }
        var pending = Append(durability);
        return Environment.Commits.CompleteAsync(pending);
    }

    /// <summary>Appends the commit to the journal and releases the write lock; the caller waits for the write.</summary>
    internal PendingCommit Append(CommitDurability durability)
    {
        if (durability is not (CommitDurability.Durable or CommitDurability.Lazy)) throw new ArgumentOutOfRangeException(nameof(durability), durability, null);
        EnsureUsable();
        PendingCommit pending;
        try
        {
            Span<byte> key = stackalloc byte[256];
            foreach (var tree in _trees)
            {
                if (!tree.State.IsDirty) continue;
                PersistHeader(key[..EncodeName(tree.Name, key)], tree.State);
            }
            pending = Environment.AppendCommit(this, durability);
        }
        catch
        {
            Fail();
            throw;
        }
        _status = TransactionStatus.Committed;
        // The next write transaction may begin on top of this one while its journal entry goes to the disk.
        ReleaseWriter();
        return pending;
    }

    /// <summary>Whether the write lock and the snapshot went at commit, before the durable write.</summary>
    private bool _writerReleased;

    private void ReleaseWriter()
    {
        Pages.Release();
        _writerReleased = true;
        Environment.ReleaseWriteLock();
    }

    private void PersistHeader(ReadOnlySpan<byte> name, TreeState state)
    {
        var header = state.ToHeader();
        RootTree.Put(name, MemoryMarshal.AsBytes(new ReadOnlySpan<TreeHeader>(in header)));
        state.IsDirty = false;
    }

    private protected override void End()
    {
        if (_writerReleased)
        {
            Environment.ReleaseCommittedWriter();
            return;
        }
        if (_status != TransactionStatus.Committed)
        {
            Pages.DiscardDirty();
            Environment.FreeSpace.Rollback();
        }
        Pages.Release();
        Environment.ReleaseTransaction(this);
    }
}
