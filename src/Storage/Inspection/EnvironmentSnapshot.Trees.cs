namespace Storage.Inspection;

/// <summary>Trees of the snapshot and their entries in key order (dump, compacting copy).</summary>
public sealed partial class EnvironmentSnapshot
{
    /// <summary>The named trees, in the order of their UTF-8 names.</summary>
    /// <exception cref="SnapshotChangedException">A page is not the snapshot's version (see <see cref="ForEachEntry"/>).</exception>
    /// <exception cref="InspectionException">The tree of tree names cannot be walked; <see cref="Check(bool, IProgress{CheckProgress})"/> says all that is wrong.</exception>
    public IReadOnlyList<SnapshotTree> ListTrees() => SnapshotTrees.ListTrees(this);

    /// <summary>
    /// Calls <paramref name="visitor"/> for every entry of a tree of this snapshot, in key order, with overflow values read
    /// whole. Every page read from the data file is checked to be the snapshot's version: it says it is that page, no
    /// transaction after the snapshot's wrote it, and its checksum holds.
    /// </summary>
    /// <param name="tree">A tree <see cref="ListTrees"/> gave.</param>
    /// <param name="visitor">Called once per entry.</param>
    /// <exception cref="SnapshotChangedException">
    /// A page is not the snapshot's version: in an environment another process has open, its flusher overwrote the page
    /// meanwhile (open a new snapshot and start again); in a closed one, the page is damaged.
    /// </exception>
    /// <exception cref="InspectionException">The tree cannot be walked (a reference out of range, a page reached twice, a node that does not decode).</exception>
    public void ForEachEntry(SnapshotTree tree, SnapshotEntryVisitor visitor)
    {
        ArgumentNullException.ThrowIfNull(tree);
        SnapshotTrees.ForEachEntry(this, tree.Header, visitor);
    }
}
