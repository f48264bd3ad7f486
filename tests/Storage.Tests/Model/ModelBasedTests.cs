using System.Globalization;
using FsCheck;
using FsCheck.Fluent;
using Microsoft.FSharp.Core;

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
    public void For_a_fixed_set_of_random_command_sequences() => Check(FixedSeed, Tests(250));

    [Fact]
    public void For_fresh_random_command_sequences() =>
        Check(Seed() ?? (ulong)Random.Shared.NextInt64(1, long.MaxValue), Tests(250));

    private static ulong? Seed() =>
        ulong.TryParse(System.Environment.GetEnvironmentVariable("STORAGE_MODEL_SEED"), NumberStyles.Integer, CultureInfo.InvariantCulture, out var seed) ? seed : null;

    private static int Tests(int defaultCount) =>
        int.TryParse(System.Environment.GetEnvironmentVariable("STORAGE_MODEL_TESTS"), NumberStyles.Integer, CultureInfo.InvariantCulture, out var count) ? count : defaultCount;

    private static void Check(ulong seed, int tests)
    {
        var property = Prop.ForAll(ModelGenerators.Scenarios(MaxCommands), (Scenario scenario) =>
        {
            using var runner = new ModelRunner(scenario.OptionsIndex);
            runner.Run(scenario);
        });
        var config = Config.QuickThrowOnFailure
            .WithMaxTest(tests)
            .WithQuietOnSuccess(true)
            .WithReplay(FSharpOption<Replay>.Some(new Replay(new Rnd(seed, 0x9E3779B97F4A7C15UL | 1), FSharpOption<int>.None)));
        try
        {
            FsCheck.Check.One(config, property);
        }
        catch (Exception e)
        {
            throw new Xunit.Sdk.XunitException($"Model-based run failed; replay with STORAGE_MODEL_SEED={seed}.{System.Environment.NewLine}{e.Message}");
        }
    }
}
