using FsCheck;
using FsCheck.Fluent;

namespace Storage.Tests.ModelTests;

/// <summary>
/// Random command sequences (put, delete, get, range and prefix scans both ways, commit, rollback, reopen,
/// crash-and-reopen (the closed files checked clean each time), checkpoint, compaction, up to four long-lived snapshots at once) against an in-memory sorted dictionary. One run
/// uses a fixed seed (the same sequences every time), the other a fresh seed printed on failure. To replay
/// a failure, set STORAGE_MODEL_SEED to the printed seed (and STORAGE_MODEL_TESTS to run more or fewer).
/// </summary>
public sealed class The_engine_behaves_like_a_sorted_dictionary_with_transactions
{
    private const ulong FixedSeed = 0x5EED_0001;
    private const int MaxCommands = 250;

    [Fact]
    public void For_a_fixed_set_of_random_command_sequences() => Check(FixedSeed, ModelCheck.Tests(250));

    [Fact]
    public void For_fresh_random_command_sequences() =>
        Check(ModelCheck.FreshSeed(), ModelCheck.Tests(250));

    private static void Check(ulong seed, int tests)
    {
        var property = Prop.ForAll(ModelGenerators.Scenarios(MaxCommands), (Scenario scenario) =>
        {
            using var runner = new ModelRunner(scenario.OptionsIndex);
            runner.Run(scenario);
        });
        ModelCheck.Run(ModelCheck.Config(seed, tests), property, seed, "run");
    }
}
