using System.Globalization;
using FsCheck;
using Microsoft.FSharp.Core;

namespace Storage.Tests.ModelTests;

/// <summary>
/// What the model-based tests share: the seed of a fresh run (STORAGE_MODEL_SEED replays one), the number of sequences
/// (STORAGE_MODEL_TESTS), a configuration that replays a seed exactly, and a failure that names the seed.
/// </summary>
internal static class ModelCheck
{
    /// <summary>STORAGE_MODEL_SEED when set, else a new random seed.</summary>
    public static ulong FreshSeed() =>
        ulong.TryParse(Environment.GetEnvironmentVariable("STORAGE_MODEL_SEED"), NumberStyles.Integer, CultureInfo.InvariantCulture, out var seed)
            ? seed
            : (ulong)Random.Shared.NextInt64(1, long.MaxValue);

    /// <summary>STORAGE_MODEL_TESTS divided by <paramref name="costRatio"/> (a suite whose sequences cost more; at least 1) when set, else <paramref name="defaultCount"/>.</summary>
    public static int Tests(int defaultCount, int costRatio = 1) =>
        int.TryParse(Environment.GetEnvironmentVariable("STORAGE_MODEL_TESTS"), NumberStyles.Integer, CultureInfo.InvariantCulture, out var count)
            ? Math.Max(1, count / costRatio)
            : defaultCount;

    /// <summary><paramref name="tests"/> sequences, quiet on success, generated from <paramref name="seed"/>.</summary>
    public static Config Config(ulong seed, int tests) => FsCheck.Config.QuickThrowOnFailure
        .WithMaxTest(tests)
        .WithQuietOnSuccess(true)
        .WithReplay(FSharpOption<Replay>.Some(new Replay(new Rnd(seed, 0x9E3779B97F4A7C15UL | 1), FSharpOption<int>.None)));

    /// <summary>Checks <paramref name="property"/>; a failure says "Model-based <paramref name="what"/> failed" and how to replay it.</summary>
    public static void Run(Config config, Property property, ulong seed, string what)
    {
        try
        {
            Check.One(config, property);
        }
        catch (Exception e)
        {
            throw new Xunit.Sdk.XunitException($"Model-based {what} failed; replay with STORAGE_MODEL_SEED={seed}.{Environment.NewLine}{e.Message}");
        }
    }
}
