namespace Storage.Faults;

/// <summary>
/// Test seams of an environment: settings that reach states a user never chooses (a fault at a chosen call, freed scratch
/// filled with a pattern, a low transaction size limit). Internal, so that no user can set them; tests set them through
/// <see cref="StorageOptions.Hooks"/>.
/// </summary>
internal sealed record EnvironmentHooks
{
    /// <summary>No seams: what every environment a user opens has.</summary>
    public static EnvironmentHooks None { get; } = new();

    /// <summary>The most page bytes one transaction may journal (recovery replays an entry in one piece). Tests lower it.</summary>
    public long MaxTransactionPayloadBytes { get; init; } = int.MaxValue - 64L * 1024;

    /// <summary>Scratch buffers given back are filled with a pattern, so reading one that was freed too early fails loudly.</summary>
    public bool PoisonFreedScratch { get; init; }

    /// <summary>Scratch spills to the scratch file whenever snapshots pin anything, whatever the budget.</summary>
    public bool SpillWhenPinned { get; init; }

    /// <summary>Fails chosen writes and syncs.</summary>
    public IFaultInjector? FaultInjector { get; init; }
}
