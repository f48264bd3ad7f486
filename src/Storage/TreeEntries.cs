using System.Collections;

namespace Storage;

/// <summary>
/// A range or prefix of a tree as an ordinary enumerable of copies (see <see cref="Tree.ReadRange"/> and
/// <see cref="Tree.ReadPrefix"/>): each entry's key and value are new arrays, so the enumeration may continue across
/// <c>await</c> and works with LINQ. It reads the transaction's snapshot, so the transaction must stay open while it
/// is enumerated; each enumeration starts again from the first entry.
/// </summary>
internal sealed class TreeEntries(Tree tree, byte[] fromInclusive, byte[] toExclusive, byte[] prefix, bool reverse)
    : IEnumerable<KeyValuePair<byte[], byte[]>>
{
    public IEnumerator<KeyValuePair<byte[], byte[]>> GetEnumerator()
    {
        var cursor = tree.CreateCursor();
        var started = false;
        while (Advance(cursor, started))
        {
            started = true;
            yield return new(cursor.Key.ToArray(), cursor.Value.ToArray());
        }
    }

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();

    /// <summary>One step of the range over the cursor's current place (the range's rules, bounds and direction are <see cref="TreeRange"/>'s).</summary>
    private bool Advance(TreeCursor cursor, bool started) =>
        new TreeRange(cursor, fromInclusive, toExclusive, prefix, reverse, started).MoveNext();
}
