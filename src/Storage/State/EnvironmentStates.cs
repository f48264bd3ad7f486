namespace Storage.State;

/// <summary>
/// The two states transactions begin on: readers on the newest state made visible (the last commit durable in the
/// journal, or a lazy one, visible at once), the write transaction on the newest appended, durable or not.
/// </summary>
internal sealed class EnvironmentStates(EnvironmentState recovered)
{
    private EnvironmentState _readable = recovered;
    private EnvironmentState _writer = recovered;

    /// <summary>The state a read transaction begins on.</summary>
    public EnvironmentState Readable => Volatile.Read(ref _readable);

    /// <summary>The field behind <see cref="Readable"/>, for a reader's registration (which checks it did not change under it).</summary>
    public ref EnvironmentState ReadableSlot => ref _readable;

    /// <summary>The state the next write transaction begins on (read and written under the write lock).</summary>
    public EnvironmentState Writer => _writer;

    /// <summary>The field behind <see cref="Writer"/>, for the writer's registration.</summary>
    public ref EnvironmentState WriterSlot => ref _writer;

    /// <summary>A commit was appended: the next write transaction begins on it. Called by the writer only.</summary>
    public void Appended(EnvironmentState state) => _writer = state;

    /// <summary>
    /// Makes <paramref name="state"/> the one readers begin on, with a full fence: a reader that registers on the old state is
    /// then visible to a pruner that reads the new one.
    /// </summary>
    public void Publish(EnvironmentState state) => Interlocked.Exchange(ref _readable, state);
}
