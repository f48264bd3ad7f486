using System.Runtime.CompilerServices;
using Storage.Paging;

namespace Storage.Trees;

/// <summary>
/// Walks a <see cref="BTree"/>'s entries in key order, both ways, across pages. Created by <see cref="BTree.CreateCursor"/>.
/// </summary>
/// <remarks>
/// <para>The cursor keeps its path from the root (pages have no sibling links) and a copy of the current key. When
/// the tree changes after the cursor was positioned (<see cref="TreeState.Version"/> moved), the next move seeks
/// again from that copy, so it continues from where it was: after the current entry was deleted, MoveNext yields
/// the following key and MovePrevious the preceding one.</para>
/// <para>A cursor that is not positioned (new, or moved past either end) stays so until a Seek.</para>
/// </remarks>
internal sealed unsafe class BTreeCursor
{
    private readonly BTree _tree;
    private readonly TreePath _path = new();
    private readonly byte[]? _keyBuffer;
    private int _keySizeBytes;
    private bool _isPositioned;

    /// <summary>The tree's version when the cursor was positioned; the leaf pointer is only current while it matches.</summary>
    private long _version;
    private byte* _leaf;
    private long _leafPageNumber;
    private int _index;

    /// <summary>
    /// Read-ahead: the lowest branch whose children were last asked for, in which direction, the child index the
    /// request reached (exclusive going forward, inclusive going backward), and the next request's size in leaves.
    /// </summary>
    private long _aheadParent = -1;
    private bool _aheadForward;
    private int _aheadEdge;
    private int _aheadWindow = MinReadAheadLeaves;
    private PageRun[]? _aheadRuns;

    /// <summary>The next leaf's lines still to prefetch, and where they start.</summary>
    private int _aheadLines;
    private byte* _aheadPage;

    /// <summary>
    /// A scan's first request asks for this many leaves past the one it stepped into; each next one doubles, up to
    /// <see cref="MaxReadAheadLeaves"/> (512 KiB), so a short range after a seek reads little and a long scan keeps
    /// the device busy ahead of it. A new request goes out when half the last one is still ahead.
    /// </summary>
    private const int MinReadAheadLeaves = 4;
    private const int MaxReadAheadLeaves = 64;

    internal BTreeCursor(BTree tree)
    {
        _tree = tree;
        // Only a tree that can change needs the key kept aside to find its place again; in a read transaction the
        // current key is read from the page, which stays valid and unchanged until the transaction ends.
        if (tree.Store.IsWritable)
        {
            _keyBuffer = new byte[TreeLimits.MaxKeySizeBytes];
        }
    }

    public bool IsPositioned => _isPositioned;

    /// <summary>The leaf page the cursor is on (for tests and inspection).</summary>
    internal long LeafPageNumber => _leafPageNumber;

    /// <summary>
    /// The current key: in a write transaction the cursor's own copy, valid until the cursor moves; in a read
    /// transaction a view of the page, valid until the transaction ends.
    /// </summary>
    public ReadOnlySpan<byte> Key
    {
        get
        {
            if (!_isPositioned)
            {
                TreeThrowHelper.ThrowCursorNotPositioned();
            }
            return _keyBuffer is null ? CurrentLeaf().GetKey(_index) : new ReadOnlySpan<byte>(_keyBuffer, 0, _keySizeBytes);
        }
    }

    /// <summary>
    /// The current value, from the page or overflow run (no copy; valid until the transaction ends). Throws
    /// <see cref="InvalidOperationException"/> when the entry was deleted since the cursor reached it.
    /// </summary>
    public ReadOnlySpan<byte> Value
    {
        get
        {
            if (!_isPositioned)
            {
                TreeThrowHelper.ThrowCursorNotPositioned();
            }
            if (_version != _tree.State.Version)
            {
                // Re-find the entry; if it is gone, stay stale so that the next move seeks from the saved key.
                if (!PositionAtOrAfter(Key, out bool exact) || !exact)
                {
                    TreeThrowHelper.ThrowCursorEntryDeleted();
                }
                _version = _tree.State.Version;
            }
            return _tree.ResolveValue(CurrentLeaf().GetValue(_index));
        }
    }

    public bool SeekFirst()
    {
        ResetReadAhead();
        var leaf = _tree.DescendToEdge(_path, last: false);
        SetLeaf(leaf, 0);
        PrefetchNodes(leaf, 0, forward: true);
        return leaf.Count > 0 || MoveToSiblingLeaf(forward: true) ? Positioned() : NotPositioned();
    }

    public bool SeekLast()
    {
        ResetReadAhead();
        var leaf = _tree.DescendToEdge(_path, last: true);
        SetLeaf(leaf, leaf.Count - 1);
        PrefetchNodes(leaf, leaf.Count - 1, forward: false);
        return leaf.Count > 0 || MoveToSiblingLeaf(forward: false) ? Positioned() : NotPositioned();
    }

    /// <summary>Positions on the first key greater than or equal to <paramref name="key"/>.</summary>
    public bool Seek(ReadOnlySpan<byte> key) =>
        PositionAtOrAfter(key, out _) ? Positioned() : NotPositioned();

    /// <summary>Positions on the last key less than or equal to <paramref name="key"/>.</summary>
    public bool SeekLastLessOrEqual(ReadOnlySpan<byte> key) =>
        PositionAtOrBefore(key, out _) ? Positioned() : NotPositioned();

    public bool MoveNext()
    {
        if (!_isPositioned)
        {
            return false;
        }
        if (_version != _tree.State.Version)
        {
            if (!PositionAtOrAfter(Key, out bool exact))
            {
                return NotPositioned();
            }
            if (!exact)
            {
                // The current entry is gone; the first key after it is the next one.
                return Positioned();
            }
        }
        return Step(forward: true) ? Positioned() : NotPositioned();
    }

    public bool MovePrevious()
    {
        if (!_isPositioned)
        {
            return false;
        }
        if (_version != _tree.State.Version)
        {
            if (!PositionAtOrBefore(Key, out bool exact))
            {
                return NotPositioned();
            }
            if (!exact)
            {
                return Positioned();
            }
        }
        return Step(forward: false) ? Positioned() : NotPositioned();
    }

    /// <summary>Moves the position to the first entry at or after the key, without touching the saved key.</summary>
    private bool PositionAtOrAfter(ReadOnlySpan<byte> key, out bool exact)
    {
        ResetReadAhead();
        var leaf = _tree.DescendToLeaf(key, _path);
        int index = leaf.SearchLeaf(key, out exact);
        SetLeaf(leaf, index);
        PrefetchNodes(leaf, index, forward: true);
        return index < leaf.Count || MoveToSiblingLeaf(forward: true);
    }

    /// <summary>Moves the position to the last entry at or before the key, without touching the saved key.</summary>
    private bool PositionAtOrBefore(ReadOnlySpan<byte> key, out bool exact)
    {
        ResetReadAhead();
        var leaf = _tree.DescendToLeaf(key, _path);
        int index = leaf.SearchLeaf(key, out exact);
        // Keys of the leaves to the left are all below this leaf's range, so they are all before the key.
        SetLeaf(leaf, exact ? index : index - 1);
        PrefetchNodes(leaf, _index, forward: false);
        return _index >= 0 || MoveToSiblingLeaf(forward: false);
    }

    private bool Step(bool forward)
    {
        if (forward)
        {
            var leaf = CurrentLeaf();
            if (_index + 1 < leaf.Count)
            {
                _index++;
                leaf.PrefetchNode(_index + NodePrefetchDistance);
                if (_aheadLines > 0) PrefetchAhead();
                return true;
            }
        }
        else if (_index > 0)
        {
            _index--;
            CurrentLeaf().PrefetchNode(_index - NodePrefetchDistance);
            if (_aheadLines > 0) PrefetchAhead();
            return true;
        }
        return MoveToSiblingLeaf(forward);
    }

    /// <summary>
    /// Moves to the first entry of the next non-empty leaf (or the last of the previous one): up the path to the
    /// nearest branch with a further child, then down its edge to the leaf level.
    /// </summary>
    /// <remarks>
    /// The leaf reached must continue the order of the one left: a branch that points twice at one page (all checksums
    /// valid) would otherwise have a scan return entries again, or run through a chain of such branches for ever.
    /// </remarks>
    private bool MoveToSiblingLeaf(bool forward)
    {
        var left = CurrentLeaf();
        var boundary = left.Count > 0 ? left.GetKey(forward ? left.Count - 1 : 0) : default;
        var leftPageNumber = _leafPageNumber;
        int leafLevel = _path.LeafLevel;
        int level = leafLevel - 1;
        while (level >= 0)
        {
            var branch = _tree.OpenPageAtLevel(_path.Pages[level], level);
            int next = _path.Indices[level] + (forward ? 1 : -1);
            if (next < 0 || next >= branch.Count)
            {
                level--;
                continue;
            }
            _path.Indices[level] = next;
            long pageNumber = branch.GetChild(next);
            // The leaf's parent: this branch, or the last page of the way down to the leaf level.
            var parent = branch;
            for (level++; level < leafLevel; level++)
            {
                var page = _tree.OpenPageAtLevel(pageNumber, level);
                parent = page;
                _path.Pages[level] = pageNumber;
                if (page.Count == 0)
                {
                    TreeThrowHelper.ThrowEmptyBranch(pageNumber);
                }
                int edge = forward ? 0 : page.Count - 1;
                _path.Indices[level] = edge;
                pageNumber = page.GetChild(edge);
            }
            var leaf = _tree.OpenPageAtLevel(pageNumber, leafLevel);
            _path.Pages[leafLevel] = pageNumber;
            if (leaf.Count > 0)
            {
                if (!boundary.IsEmpty)
                {
                    var order = leaf.GetKey(forward ? 0 : leaf.Count - 1).SequenceCompareTo(boundary);
                    if (forward ? order <= 0 : order >= 0)
                    {
                        TreeThrowHelper.ThrowCorrupted(pageNumber,
                            $"Leaf {pageNumber} follows leaf {leftPageNumber} in the tree but its keys do not come {(forward ? "after" : "before")} that leaf's.");
                    }
                }
                SetLeaf(leaf, forward ? 0 : leaf.Count - 1);
                PrefetchNodes(leaf, _index, forward);
                ReadAhead(parent, forward);
                PrefetchSiblingLeaf(parent, forward);
                return true;
            }
            // An empty leaf (only the root may be one in a valid tree): keep going from it.
            level = leafLevel - 1;
        }
        return false;
    }

    /// <summary>
    /// Starts loading the head (header and first offsets) of the leaf after the current one, so that stepping into
    /// it does not wait for memory: leaves written at random lie far apart, where no hardware prefetcher follows. A
    /// leaf whose first read will checksum all of it is loaded whole, a few lines per step through the current leaf
    /// (<see cref="PrefetchAhead"/>): asked for at once, its 128 lines would stall the scan on the CPU's few
    /// outstanding-miss buffers.
    /// </summary>
    private void PrefetchSiblingLeaf(TreePage parent, bool forward)
    {
        _aheadLines = 0;
        if (!System.Runtime.Intrinsics.X86.Sse.IsSupported) return;
        int sibling = _path.Indices[_path.LeafLevel - 1] + (forward ? 1 : -1);
        if (sibling < 0 || sibling >= parent.Count) return;
        byte* page = _tree.Store.PeekPage(parent.GetChild(sibling), out bool firstRead);
        if (page is null) return;
        PageLayout.PrefetchHead(page);
        if (firstRead)
        {
            _aheadPage = page + PageLayout.HeadPrefetchBytes;
            _aheadLines = (PageLayout.PageSizeBytes - PageLayout.HeadPrefetchBytes) / 64;
        }
    }

    /// <summary>
    /// A few more lines of the next leaf, while its whole page is wanted (<see cref="PrefetchSiblingLeaf"/>). Out of
    /// line, so that the step stays small; compiled optimised at once, since a process may run it only in its first
    /// scan of a file.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    private void PrefetchAhead()
    {
        int lines = Math.Min(_aheadLines, AheadLinesPerStep);
        PageLayout.PrefetchLines(_aheadPage, lines);
        _aheadPage += lines * 64;
        _aheadLines -= lines;
    }

    private const int AheadLinesPerStep = 4;

    private void ResetReadAhead()
    {
        _aheadLines = 0;
        _aheadParent = -1;
        _aheadWindow = MinReadAheadLeaves;
    }

    /// <summary>
    /// Called after stepping into a sibling leaf, with its parent <paramref name="branch"/>: asks the page store for the
    /// leaves ahead in the same direction (children of that parent), so that a scan over pages not yet in memory does
    /// not wait for them one by one. The map may be advised for random access, where the kernel reads nothing ahead by
    /// itself.
    /// </summary>
    private void ReadAhead(TreePage branch, bool forward)
    {
        long parent = branch.PageNumber;
        int index = _path.Indices[_path.LeafLevel - 1];
        if (parent != _aheadParent || forward != _aheadForward)
        {
            if (forward != _aheadForward)
            {
                _aheadWindow = MinReadAheadLeaves;
            }
            _aheadParent = parent;
            _aheadForward = forward;
            _aheadEdge = forward ? index + 1 : index;
        }
        int stillAhead = forward ? _aheadEdge - index - 1 : index - _aheadEdge;
        if (stillAhead >= _aheadWindow / 2)
        {
            return;
        }
        int first;
        int end;
        if (forward)
        {
            first = Math.Max(_aheadEdge, index + 1);
            end = Math.Min(branch.Count, first + _aheadWindow);
            _aheadEdge = Math.Max(end, first);
        }
        else
        {
            end = Math.Min(_aheadEdge, index);
            first = Math.Max(0, end - _aheadWindow);
            _aheadEdge = first;
        }
        if (end <= first)
        {
            return;
        }
        var runs = _aheadRuns ??= new PageRun[MaxReadAheadLeaves];
        int count = 0;
        for (int child = first; child < end; child++)
        {
            runs[count++] = new PageRun(branch.GetChild(child), 1);
        }
        _tree.Store.ReadAhead(runs.AsSpan(0, count));
        _aheadWindow = Math.Min(_aheadWindow * 2, MaxReadAheadLeaves);
    }

    private void SetLeaf(TreePage leaf, int index)
    {
        _leaf = leaf.Pointer;
        _leafPageNumber = leaf.PageNumber;
        _index = index;
    }

    /// <summary>Starts loading the nodes a scan from <paramref name="index"/> reads next, in its direction.</summary>
    private static void PrefetchNodes(TreePage leaf, int index, bool forward)
    {
        for (int ahead = 1; ahead <= NodePrefetchDistance; ahead++)
        {
            leaf.PrefetchNode(forward ? index + ahead : index - ahead);
        }
    }

    /// <summary>
    /// A scan loads the node this many entries ahead while it reads the current one. Nodes lie in a page in the
    /// order they were written, not in key order, so without it every step of a scan over pages written at random
    /// waits for memory once.
    /// </summary>
    private const int NodePrefetchDistance = 8;

    // Opened (and checked) in SetLeaf; the tree version is checked before every use after a change.
    private TreePage CurrentLeaf() => TreePage.Reopen(_leaf, _leafPageNumber);

    /// <summary>Commits the position: saves the current key and the version it belongs to.</summary>
    private bool Positioned()
    {
        if (_keyBuffer is not null)
        {
            var key = CurrentLeaf().GetKey(_index);
            key.CopyTo(_keyBuffer);
            _keySizeBytes = key.Length;
        }
        _version = _tree.State.Version;
        _isPositioned = true;
        return true;
    }

    private bool NotPositioned()
    {
        _isPositioned = false;
        _keySizeBytes = 0;
        return false;
    }
}
