namespace Storage.State;

/// <summary>
/// Whether the environment still accepts writes. A failure that only the journal can repair (a failed fsync or journal
/// write, a broken invariant) poisons it: writes are refused from then on, and reopening recovers from the journal.
/// The first cause is kept.
/// </summary>
internal sealed class EnvironmentHealth
{
    private volatile Exception? _poison;

    public bool IsPoisoned => _poison is not null;

    /// <summary>Stops writes after <paramref name="cause"/>; a later failure does not replace the first.</summary>
    public void Poison(Exception cause) => Interlocked.CompareExchange(ref _poison, cause, null);

    /// <exception cref="StorageException"><see cref="StorageErrorCode.EnvironmentPoisoned"/>, naming the first cause.</exception>
    public void ThrowIfPoisoned()
    {
        var poison = _poison;
        if (poison is not null)
        {
            throw new StorageException(StorageErrorCode.EnvironmentPoisoned, $"The environment stopped accepting writes after a failure ({poison.Message}); reopen it to recover from the journal.", poison);
        }
    }
}
