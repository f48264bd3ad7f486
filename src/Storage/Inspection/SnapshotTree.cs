using Storage.Trees;

namespace Storage.Inspection;

/// <summary>A named tree of an <see cref="EnvironmentSnapshot"/>, as the tree of tree names holds it.</summary>
/// <param name="Name">The tree's name.</param>
/// <param name="Entries">Entries, as the tree's header says.</param>
public sealed record SnapshotTree(string Name, long Entries)
{
    /// <summary>The persisted header the walk starts from.</summary>
    internal TreeHeader Header { get; init; }
}
