using System.Diagnostics;
using Storage.Paging;

namespace Storage.Trees;

/// <summary>
/// A B+Tree of byte keys (ordinal order, 1 to 1024 bytes) and byte values (0 to 2 GiB) on the pages of one
/// transaction. Pages have no sibling links: a <see cref="TreePath"/> from the root finds parents and neighbours.
/// </summary>
/// <remarks>
/// <para>Concerns live in separate files: lookups and descent here, <c>BTree.Insert.cs</c>, <c>BTree.Split.cs</c>,
/// <c>BTree.Delete.cs</c> (merges), <c>BTree.Overflow.cs</c> (large values), <c>BTree.Walk.cs</c> (whole-tree
/// walks) and <c>BTree.Validate.cs</c> (the consistency check).</para>
/// <para>Pages are read with <see cref="ITreePageStore.GetPage"/> on the way down and only the pages that really
/// change are passed to <see cref="ITreePageStore.ModifyPage(long, out ulong*)"/>, at the point of change: each modified page costs
/// the journal a diff. Every change updates <see cref="TreeState"/>'s counters, sets IsDirty and bumps Version.</para>
/// <para>Not thread-safe: one instance per tree per transaction, used by one thread at a time.</para>
/// </remarks>
internal sealed unsafe partial class BTree
{
    private readonly ITreePageStore _store;
    private readonly TreeState _state;

    /// <summary>The path of the current operation; reused, so that Put/Delete/TryGet do not allocate (the store's one path for its write transactions, or this tree's own).</summary>
    private readonly TreePath _path;

    /// <summary>Working arrays for changes: the store's (the environment's one set for its write transactions), or, for a store without, this tree's own, made at its first change.</summary>
    private TreeWorkspace? _workspace;

    private TreeWorkspace Workspace => _workspace ??= _store.Workspace ?? new TreeWorkspace();

    public BTree(ITreePageStore store, TreeState state)
    {
        ArgumentNullException.ThrowIfNull(store);
        ArgumentNullException.ThrowIfNull(state);
        _store = store;
        _state = state;
        _path = store.Workspace?.Path ?? new TreePath();
    }

    public TreeState State => _state;

    internal ITreePageStore Store => _store;

    /// <summary>Allocates the empty root leaf of a new tree and returns the tree's state.</summary>
    public static TreeState Create(ITreePageStore store, int treeId, long nearPageNumber = -1)
    {
        ArgumentNullException.ThrowIfNull(store);
        long pageNumber = store.AllocatePages(1, nearPageNumber, out byte* page);
        TreePage.Reset(page, pageNumber, PageFlags.Leaf, treeId);
        return new TreeState
        {
            TreeId = treeId,
            RootPage = pageNumber,
            Depth = 1,
            LeafPages = 1,
            IsDirty = true,
        };
    }

    /// <summary>Looks a key up. The value points into the page or overflow run (no copy); it is valid until the
    /// transaction ends, and shows the old bytes if the tree changes the entry afterwards.</summary>
    public bool TryGet(ReadOnlySpan<byte> key, out ReadOnlySpan<byte> value)
    {
        CheckKeySize(key.Length);
        var leaf = DescendToLeaf(key, _path);
        int index = leaf.FindInLeaf(key);
        if (index < 0)
        {
            value = default;
            return false;
        }
        value = ResolveValue(leaf.GetValue(index));
        return true;
    }

    public BTreeCursor CreateCursor() => new(this);

    /// <summary>The value bytes of a leaf value, following an overflow reference.</summary>
    internal ReadOnlySpan<byte> ResolveValue(LeafValue value) =>
        value.IsOverflow ? ReadOverflow(value.OverflowPage) : value.Inline;

    /// <summary>Walks from the root to the leaf whose range holds <paramref name="key"/>, recording the path.</summary>
    internal TreePage DescendToLeaf(ReadOnlySpan<byte> key, TreePath path)
    {
        long pageNumber = _state.RootPage;
        for (int level = 0; ; level++)
        {
            var page = OpenPageAtLevel(pageNumber, level);
            path.EnsureLevel(level);
            path.Pages[level] = pageNumber;
            if (page.IsLeaf)
            {
                path.LeafLevel = level;
                return page;
            }
            int index = page.SearchBranch(key);
            path.Indices[level] = index;
            pageNumber = page.GetChild(index);
        }
    }

    /// <summary>Walks from the root to the first (or last) leaf, recording the path.</summary>
    internal TreePage DescendToEdge(TreePath path, bool last)
    {
        long pageNumber = _state.RootPage;
        for (int level = 0; ; level++)
        {
            var page = OpenPageAtLevel(pageNumber, level);
            path.EnsureLevel(level);
            path.Pages[level] = pageNumber;
            if (page.IsLeaf)
            {
                path.LeafLevel = level;
                return page;
            }
            if (page.Count == 0)
            {
                TreeThrowHelper.ThrowEmptyBranch(pageNumber);
            }
            int index = last ? page.Count - 1 : 0;
            path.Indices[level] = index;
            pageNumber = page.GetChild(index);
        }
    }

    /// <summary>
    /// Opens a page met at <paramref name="level"/> of a descent and checks that its type fits the tree's depth, so a
    /// damaged file with a cycle or an unbalanced branch ends in <see cref="StorageCorruptedException"/>.
    /// </summary>
    internal TreePage OpenPageAtLevel(long pageNumber, int level)
    {
        if (level >= TreeNodeLayout.MaxTreeDepth)
        {
            TreeThrowHelper.ThrowTooDeep(pageNumber);
        }
        var page = OpenPage(pageNumber);
        int leafLevel = _state.Depth - 1;
        if (page.IsLeaf ? level != leafLevel : level >= leafLevel)
        {
            TreeThrowHelper.ThrowUnbalanced(pageNumber, level, _state.Depth);
        }
        return page;
    }

    internal TreePage OpenPage(long pageNumber)
    {
        if (pageNumber < TreeNodeLayout.FirstTreePageNumber)
        {
            TreeThrowHelper.ThrowCorrupted(pageNumber, "A tree refers to a file header page.");
        }
        return Owned(TreePage.Open(_store.GetPage(pageNumber), pageNumber));
    }

    /// <summary>A writable copy of the page whose writes are recorded, so that the commit compares only the bytes they changed.</summary>
    private TreePage ModifyPage(long pageNumber) => ModifyPage(pageNumber, current: null);

    /// <summary>As <see cref="ModifyPage(long)"/>, for a page this transaction just read (no second lookup).</summary>
    private TreePage ModifyPage(TreePage read) => ModifyPage(read.PageNumber, read.Pointer);

    private TreePage ModifyPage(long pageNumber, byte* current)
    {
        byte* page = _store.ModifyPage(pageNumber, current, out ulong* writtenLines);
        return Owned(TreePage.Open(page, pageNumber, writtenLines));
    }

    /// <summary>
    /// A page reached from this tree must say it belongs to this tree: a page of another tree here means a page was
    /// handed out again while still in use (a damaged free-space bitmap), and reading on would return its data.
    /// </summary>
    private TreePage Owned(TreePage page)
    {
        var owner = ((PageHeader*)page.Pointer)->TreeId;
        if (owner != _state.TreeId) TreeThrowHelper.ThrowWrongOwner(page.PageNumber, owner, _state.TreeId);
        return page;
    }

    private TreePage AllocatePage(PageFlags type, long nearPageNumber)
    {
        long pageNumber = _store.AllocatePages(1, nearPageNumber, out byte* page);
        if (type == PageFlags.Leaf)
        {
            _state.LeafPages++;
        }
        else
        {
            _state.BranchPages++;
        }
        // AllocatePages hands out zeroed pages: only the header needs setting.
        return TreePage.Reset(page, pageNumber, type, _state.TreeId);
    }

    private void FreePage(long pageNumber, bool isLeaf)
    {
        _store.FreePages(pageNumber, 1);
        if (isLeaf)
        {
            _state.LeafPages--;
        }
        else
        {
            _state.BranchPages--;
        }
    }

    private void MarkChanged()
    {
        _state.IsDirty = true;
        _state.Version++;
    }

    private static void CheckKeySize(int keySizeBytes)
    {
        if (keySizeBytes < TreeLimits.MinKeySizeBytes || keySizeBytes > TreeLimits.MaxKeySizeBytes)
        {
            TreeThrowHelper.ThrowKeySizeOutOfRange(keySizeBytes);
        }
    }

    /// <summary>
    /// Returns <paramref name="bytes"/>, or a copy in <paramref name="scratch"/> when they lie inside
    /// <paramref name="page"/> (a value the caller read from this tree): the page is about to be rewritten.
    /// </summary>
    private static ReadOnlySpan<byte> CopyIfInsidePage(ReadOnlySpan<byte> bytes, byte* page, byte[] scratch)
    {
        if (bytes.Overlaps(new ReadOnlySpan<byte>(page, PageLayout.PageSizeBytes)))
        {
            Debug.Assert(bytes.Length <= scratch.Length, "keys and inline values fit their scratch buffers");
            bytes.CopyTo(scratch);
            return new ReadOnlySpan<byte>(scratch, 0, bytes.Length);
        }
        return bytes;
    }
}
