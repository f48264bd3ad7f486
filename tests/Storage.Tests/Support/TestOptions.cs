namespace Storage.Tests.Support;

/// <summary>Options the engine tests open environments with.</summary>
internal static class TestOptions
{
    /// <summary>
    /// Small journal files, so that ordinary tests switch, grow and retire files; scratch buffers are poisoned when
    /// given back, so a snapshot reading one freed too early fails its checks.
    /// </summary>
    public static StorageOptions Small { get; } = new()
    {
        MinJournalFileSizeBytes = 64 << 10,
        MaxJournalFileSizeBytes = 256 << 10,
        Hooks = new() { PoisonFreedScratch = true },
    };

    /// <summary>
    /// Nothing reaches the data file unless the test asks (Checkpoint or Dispose): commits live only in the
    /// journal, which is what crash and journal-damage tests need.
    /// </summary>
    public static StorageOptions JournalOnly { get; } = Small with
    {
        FlushInterval = TimeSpan.FromMilliseconds(600_000),
        SyncInterval = TimeSpan.FromMilliseconds(600_000),
        ScratchBudgetBytes = 1L << 30,
        MaxJournalFileSizeBytes = 4 << 20,
    };

    /// <summary>Background flushes and syncs as often as possible.</summary>
    public static StorageOptions Busy { get; } = Small with
    {
        FlushInterval = TimeSpan.FromMilliseconds(1),
        SyncInterval = TimeSpan.FromMilliseconds(1),
        ScratchBudgetBytes = 1 << 20,
    };
}
