using Storage.Faults;

namespace Storage.Tests.Support;

/// <summary>Options with an environment's test seams set (<see cref="StorageOptions.Hooks"/>).</summary>
internal static class HookedOptions
{
    public static StorageOptions WithFaults(this StorageOptions options, IFaultInjector? faults) =>
        options with { Hooks = options.Hooks with { FaultInjector = faults } };

    public static StorageOptions WithMaxTransactionPayload(this StorageOptions options, long bytes) =>
        options with { Hooks = options.Hooks with { MaxTransactionPayloadBytes = bytes } };

    public static StorageOptions WithSpillWhenPinned(this StorageOptions options) =>
        options with { Hooks = options.Hooks with { SpillWhenPinned = true } };
}
