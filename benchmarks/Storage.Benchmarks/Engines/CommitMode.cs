namespace Storage.Benchmarks.Engines;

/// <summary>How an engine instance's commits reach the disk.</summary>
internal enum CommitMode
{
    /// <summary>Every commit returns once durable.</summary>
    Durable,

    /// <summary>
    /// Commits are acknowledged before they are durable (this engine's lazy durability, LMDB <c>MDB_NOSYNC</c>, RocksDB
    /// <c>sync=false</c>, SQLite <c>synchronous=NORMAL</c>); closing the instance makes everything durable.
    /// </summary>
    Lazy,
}
