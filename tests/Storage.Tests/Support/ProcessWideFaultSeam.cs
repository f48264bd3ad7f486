namespace Storage.Tests.Support;

/// <summary>
/// Tests that arm the native layer's fault seam, which is process-wide: xunit runs this collection after every
/// parallel one has finished and runs its tests one at a time, so no other test's I/O is counted or failed.
/// </summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class ProcessWideFaultSeam
{
    public const string Name = "Process-wide native fault seam";
}
