namespace Storage.Inspection;

/// <summary>Called once per entry of a tree, in key order (<see cref="EnvironmentSnapshot.ForEachEntry"/>); the spans are valid during the call only.</summary>
/// <param name="key">The entry's key.</param>
/// <param name="value">The entry's value (an overflow value read whole).</param>
public delegate void SnapshotEntryVisitor(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value);
