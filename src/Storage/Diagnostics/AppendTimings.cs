namespace Storage.Diagnostics;

/// <summary>Where one commit's append stood at the end of each phase (stopwatch timestamps), and what it measured inside them.</summary>
internal struct AppendTimings
{
    /// <summary>The transaction began.</summary>
    public long Began;

    /// <summary>Its commit began.</summary>
    public long Started;

    /// <summary>Its space was reserved; diffing its pages began.</summary>
    public long PagesStarted;

    /// <summary>Every page's record was added.</summary>
    public long Diffed;

    /// <summary>The entry was finished (compressed, checksummed).</summary>
    public long Finished;

    /// <summary>The journal had room for it (a new file, if it took one).</summary>
    public long Reserved;

    /// <summary>It was appended and published to the page table.</summary>
    public long Appended;

    /// <summary>Stamping pages' checksums, inside the diffing.</summary>
    public long ChecksumTicks;

    /// <summary>Copying pages on their first change, inside the transaction body (estimated from a sample).</summary>
    public long PageCopyTicks;

    /// <summary>Waiting for the prune lock, inside publishing.</summary>
    public long PruneLockWaitTicks;
}
