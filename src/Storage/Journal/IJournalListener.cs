namespace Storage.Journal;

/// <summary>
/// What a journal tells the commit path of the environment whose entries it writes: each durable write of those entries as it
/// returns (to time it, and to publish the commits it made durable), and the first failed one. Attached once, at open.
/// </summary>
internal interface IJournalListener
{
    /// <summary>A durable write of the environment's entries returned: its bytes and stopwatch ticks.</summary>
    void DurableWriteTimed(long bytes, long ticks);

    /// <summary>After every durable write of the environment's entries, before the waiters it covered wake; does no I/O.</summary>
    void BecameDurable();

    /// <summary>The first failed durable write: nothing after it is acknowledged.</summary>
    void WriteFailed(Exception failure);
}
